"""Helpers for MCP tests: the demo server (tests/mcp/demo_server.py), managers that are always closed,
process checks. Every wait here is bounded."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nanohermes.config.mcp_config import McpServerConfig
from nanohermes.mcp.manager import McpManager

DEMO = Path(__file__).with_name("demo_server.py")


def demo_stdio(marker_dir: Path | None = None, *extra: str, **options: Any) -> McpServerConfig:
    args = [str(DEMO), *extra]
    if marker_dir is not None:
        args += ["--marker-dir", str(marker_dir)]
    return McpServerConfig(command=sys.executable, args=tuple(args), **options)


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def process_gone(pid: int) -> bool:
    """True when `pid` no longer runs (gone, or a zombie nobody has reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Managers:
    """`managers(servers, **kwargs)` → a started McpManager (closed after the test); `.notices`."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.made: list[McpManager] = []
        self.notices: list[str] = []

    def __call__(self, servers: dict[str, McpServerConfig], **kwargs: Any) -> McpManager:
        kwargs.setdefault("cwd", self.tmp_path)
        kwargs.setdefault("log_dir", self.tmp_path / "mcp-logs")
        kwargs.setdefault("on_notice", self.notices.append)
        manager = McpManager(servers, **kwargs)
        self.made.append(manager)
        manager.start()
        return manager


def accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False
