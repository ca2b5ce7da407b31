"""MCP client (SPEC §10): Model Context Protocol servers add tools.

    manager.py     McpManager: one asyncio loop thread; servers start in the background; sync API
    connection.py  one server's SDK client (imported on the loop thread only: the `mcp` SDK loads there)
    stdio.py       the stdio transport: stdout split into lines in linear time, each at most 16 MiB;
                   stderr drained into the server's log
    logs.py        each stdio server's stderr in its own log file (capped per start, rotated), never
                   on the terminal
    results.py     a CallToolResult as the text the model sees
    status.py      what the manager tracks per server; ServerStatus for /mcp and `mcp list` (no SDK)
    surrogates.py  a reply the SDK's parser drops: one with a lone UTF-16 surrogate repaired, any
                   other answered with an error for its request
    tools.py       server tools → `nanohermes.tools.base.Tool` objects named `mcp__<server>__<tool>`

The configuration (McpServerConfig: the `[mcp_servers.NAME]` table, the JSON `mcpServers` form, ACP's
list) is `nanohermes.config.mcp_config`, beside `settings` which validates with it (below `tools`, which this
package builds on). Importing this package loads neither the SDK nor asyncio: `mcp` is imported only
when a server is configured, on the manager's thread.

    manager = start_servers(servers, cwd=workspace, log_dir=state_dir / "mcp", on_notice=say)
    # None when no server is enabled; else started in the background: close() it when done
    # (the REPL and -p at exit, `nanohermes acp` with each session, for the configured + the client's)
"""

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
    """A manager starting `servers` in the background, or None when none is enabled (nothing of the
    manager or the SDK is imported then). See `McpManager` for the arguments."""
    if not any(server.enabled for server in servers.values()):
        return None
    from nanohermes.mcp.manager import McpManager

    manager = McpManager(servers, cwd=cwd, log_dir=log_dir, on_notice=on_notice)
    manager.start()
    return manager
