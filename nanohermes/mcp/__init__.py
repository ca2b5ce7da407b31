"""MCP client (SPEC §10): Model Context Protocol servers add tools, through the official `mcp` SDK.

`manager.McpManager` runs every server on one asyncio loop thread; `connection` and `stdio` are
imported on that thread only, so importing this package loads neither the SDK nor asyncio."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nanohermes.config.mcp_config import McpServerConfig
    from nanohermes.mcp.manager import McpManager


def start_servers(
    servers: Mapping[str, McpServerConfig],
    *,
    cwd: Path,
    log_dir: Path | None,
    on_notice: Callable[[str], None] | None = None,
) -> McpManager | None:
    """A manager starting `servers` in the background, or None (nothing imported) when none is enabled."""
    if not any(server.enabled for server in servers.values()):
        return None
    from nanohermes.mcp.manager import McpManager

    manager = McpManager(servers, cwd=cwd, log_dir=log_dir, on_notice=on_notice)
    manager.start()
    return manager
