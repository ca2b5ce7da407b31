"""`python -m nanohermes` runs the command line."""

from nanohermes.cli import main

raise SystemExit(main())
