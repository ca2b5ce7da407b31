"""`/mcp` and `nanohermes mcp list`: each MCP server's state, tools and last error."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nanohermes.core.errors import EXIT_FAILURE, EXIT_OK
from nanohermes.core.types import plural, shorten
from nanohermes.ui.safe_text import terminal_safe

if TYPE_CHECKING:
    from nanohermes.config.options import CliOptions
    from nanohermes.config.settings import Settings
    from nanohermes.mcp.manager import ServerStatus

NONE_CONFIGURED = (
    "no MCP servers configured (add a [mcp_servers.NAME] table to ~/.nanohermes/config.toml, "
    "or give --mcp-config FILE)"
)
LIST_SLACK = 15.0  # `mcp list` waits beyond the largest startup_timeout: the SDK import, a slow machine


def status_lines(statuses: Sequence[ServerStatus]) -> list[tuple[str, str]]:
    """(text, style) lines, terminal-safe: a server writes its tools' descriptions and its errors."""
    lines: list[tuple[str, str]] = []
    for status in statuses:
        trusted = " · trusted" if status.trusted else ""
        head = (
            f"{status.name} · {status.state} · {status.transport}: {status.target} · "
            f"{plural(len(status.tools), 'tool')}{trusted}"
        )
        lines.append((head, _STATE_STYLES.get(status.state, "")))
        width = max((len(tool.name) for tool in status.tools), default=0)
        for tool in status.tools:
            access = "read" if tool.read_only else ("runs" if status.trusted else "asks")
            summary = shorten(tool.description, 70)
            lines.append((f"  {tool.name:<{width}}  {access:<4}  {summary}".rstrip(), ""))
        if status.last_error:
            lines.append((f"  last error: {status.last_error}", "red"))
    return [(terminal_safe(text), style) for text, style in lines]


_STATE_STYLES = {
    "ready": "green",
    "failed": "red",
    "crashed": "yellow",
    "starting": "yellow",
    "disabled": "dim",
}


def run_mcp_command(options: CliOptions, settings: Settings) -> int:
    """`nanohermes mcp list`: start every enabled server, wait, list them; 1 when one is not ready."""
    servers = settings.mcp_servers
    if not servers:
        print(NONE_CONFIGURED)
        return EXIT_OK
    from nanohermes.mcp.manager import McpManager

    manager = McpManager(servers, cwd=Path.cwd(), log_dir=settings.state_dir / "mcp")
    try:
        manager.start()
        longest = max(server.startup_timeout for server in servers.values())
        manager.wait_started(longest + LIST_SLACK)
        statuses = manager.status()
    finally:
        manager.close()
    for text, _style in status_lines(statuses):
        print(text)
    sys.stdout.flush()
    broken = [s.name for s in statuses if s.state not in ("ready", "disabled")]
    if broken:
        print(
            terminal_safe(
                f"nanohermes: not ready: {', '.join(broken)} (stderr logs in {settings.state_dir / 'mcp'})"
            ),
            file=sys.stderr,
        )
        return EXIT_FAILURE
    return EXIT_OK
