"""What a client sends, checked before it is used; and a client's text as an error shows it (cut)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import RequestError

from nanohermes.acp import convert
from nanohermes.core.errors import ConfigError

if TYPE_CHECKING:
    from nanohermes.config.mcp_config import McpServerConfig

SESSION_ID = re.compile(r"[A-Za-z0-9_.-]{1,128}")
CURSOR = re.compile(r"[0-9]{1,9}")
"""A session/list cursor: the number of sessions before the page (what next_cursor gives)."""
SHOWN_CHARS = 100


def mcp_servers_of(servers: Any) -> tuple[dict[str, McpServerConfig], list[str]]:
    """A client's `mcpServers` as configs, and a note for each one not started (a transport
    nanohermes does not speak: SSE, ACP's own). A bad entry is a JSON-RPC invalid-params error."""
    try:
        return convert.mcp_configs(servers or [])
    except ConfigError as err:
        raise RequestError(-32602, err.one_line()) from None


def shown(text: str) -> str:
    """A client's id or name quoted for an error message: a 10 KB id is cut, not echoed whole."""
    return repr(text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}…")


def workspace_of(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_absolute():
        raise RequestError(-32602, f"cwd must be an absolute path, not {shown(cwd)}")
    try:
        if path.is_dir():
            return path.resolve()
    except OSError as err:  # a name too long for the file system, a directory we may not search
        raise RequestError(-32602, f"cwd {shown(cwd)} cannot be used: {err.strerror or err}") from None
    raise RequestError(-32602, f"cwd {shown(cwd)} is not a directory")
