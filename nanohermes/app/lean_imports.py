"""Import httpx without its command-line client.

`httpx/__init__.py` ends with `from ._main import main`, which loads click, rich and pygments (about a
fifth of what `nanohermes -p` imports in all) whenever click is installed — and it is, as a dependency
of the MCP SDK's uvicorn. nanohermes never runs httpx's command line. `import_httpx` lets httpx find an
empty placeholder for `httpx._main` while it loads, so httpx falls back to its own stub `main()`
(which says the CLI's dependencies are missing); the placeholder is removed at once, so a later
`import httpx._main` gets the real module. Called by the composition root before the model client is
imported; without it everything still works, only slower.
"""

from __future__ import annotations

import sys
import types


def import_httpx() -> None:
    """Import httpx (once), skipping `httpx._main`. A no-op once httpx is loaded."""
    if "httpx" in sys.modules or "httpx._main" in sys.modules:
        return
    placeholder = types.ModuleType("httpx._main", "nanohermes: httpx's CLI is not loaded")
    sys.modules["httpx._main"] = placeholder
    try:
        import httpx  # noqa: F401  (the import is the point)
    finally:
        if sys.modules.get("httpx._main") is placeholder:
            del sys.modules["httpx._main"]
