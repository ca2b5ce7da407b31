"""`python -m nanohermes` runs the command line."""

from nanohermes.app.cli import main

raise SystemExit(main())
