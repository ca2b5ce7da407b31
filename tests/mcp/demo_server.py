"""A small MCP server written with the SDK's server class, run by the tests as a real subprocess.

    python tests/mcp/demo_server.py [--http PORT] [--marker-dir DIR] [--start-delay S] [--exit-at-start]

stdio by default; `--http PORT` serves streamable HTTP on 127.0.0.1:PORT/mcp. `--marker-dir`: where
the server writes its pid (`server.pid`), `hang` records that it was cancelled (`cancelled`) and
`spawn_child` its child's pid (`child.pid`); `grow` adds a tool at run time. `--start-delay` sleeps
before serving (a server that hangs at start-up); `--exit-at-start` writes to stderr and exits 3.
"""

from __future__ import annotations

import argparse
import base64
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True)
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def build(marker_dir: Path | None) -> MCPServer:
    server = MCPServer("demo", log_level="WARNING")

    @server.tool(annotations=READ_ONLY)
    def echo(text: str) -> str:
        """Echo the text back."""
        return f"echo: {text}"

    @server.tool(annotations=READ_ONLY)
    def add(a: int, b: int) -> dict[str, int]:
        """Add two integers (structured result)."""
        return {"sum": a + b}

    @server.tool()
    def write_note(name: str, text: str) -> str:
        """Write a note file in the server's working directory."""
        Path(name).write_text(text, encoding="utf-8")
        return f"wrote {len(text)} characters to {name}"

    @server.tool(annotations=READ_ONLY)
    def fail(message: str) -> str:
        """Always fails with the message."""
        raise ToolError(message)

    @server.tool(annotations=READ_ONLY)
    async def hang(seconds: float) -> str:
        """Sleep for a while (records its start and a cancellation in the marker directory)."""
        if marker_dir is not None:
            (marker_dir / "hang.started").write_text("hang", encoding="utf-8")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            if marker_dir is not None:
                (marker_dir / "cancelled").write_text("hang", encoding="utf-8")
            raise
        return "woke up"

    @server.tool(annotations=READ_ONLY)
    def crash() -> str:
        """Exit the server process at once."""
        os._exit(3)

    @server.tool(annotations=READ_ONLY)
    def picture() -> Image:
        """A 1x1 PNG image."""
        return Image(data=PNG, format="png")

    @server.tool(annotations=READ_ONLY)
    def pid() -> str:
        """The server's process id."""
        return str(os.getpid())

    @server.tool(annotations=READ_ONLY)
    def spawn_child() -> str:
        """Start a long-running child process (same process group) and return its pid."""
        child = subprocess.Popen(["sleep", "300"])
        if marker_dir is not None:
            (marker_dir / "child.pid").write_text(str(child.pid), encoding="utf-8")
        return str(child.pid)

    @server.tool()
    async def grow(name: str, ctx: Context) -> str:
        """Add a read-only tool called `name`, then tell the client that the tool list changed."""

        def added() -> str:
            return f"{name} is new"

        server.add_tool(added, name=name, description="Added at run time.", annotations=READ_ONLY)
        await ctx.notify_tools_changed()
        return f"added {name}"

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--marker-dir", type=Path)
    parser.add_argument("--start-delay", type=float, default=0.0)
    parser.add_argument("--exit-at-start", action="store_true")
    args = parser.parse_args()
    if args.exit_at_start:
        print("demo: cannot open the database", file=sys.stderr, flush=True)
        sys.exit(3)
    if args.marker_dir is not None:
        (args.marker_dir / "server.pid").write_text(str(os.getpid()), encoding="utf-8")
    time.sleep(args.start_delay)
    server = build(args.marker_dir)
    if args.http:
        anyio.run(lambda: server.run_streamable_http_async(host="127.0.0.1", port=args.http))
    else:
        server.run()


if __name__ == "__main__":
    main()
