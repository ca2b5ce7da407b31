"""Servers that flood: a stdout line past the limit, stderr past the log's cap (hostile_server.py)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest
from mcp_helpers import Managers, process_gone, wait_for

from nanohermes.config.mcp_config import McpServerConfig
from nanohermes.core.errors import ToolError
from nanohermes.mcp.logs import MAX_LOG_BYTES, ServerLog, ServerLogs
from nanohermes.tools.base import CallContext

pytestmark = pytest.mark.timeout(120)  # a hang guard: each test takes seconds
HOSTILE = Path(__file__).with_name("hostile_server.py")
OVER_LIMIT = 20_000_000
"""Past the 16 MiB line limit (before it, a 30 MB line took 5 s of CPU, a 100 MB one a minute)."""


def hostile(mode: str, size: int) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=(str(HOSTILE), mode, str(size)), tool_timeout=100)


def processes_in(cwd: Path) -> list[int]:
    """The processes whose working directory is `cwd` (Linux's /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and (entry / "cwd").resolve() == cwd.resolve():
                found.append(int(entry.name))
    return found


def test_a_reply_over_the_line_limit_fails_its_call_and_the_server_keeps_serving(managers: Managers) -> None:
    manager = managers({"h": hostile("huge-reply", OVER_LIMIT)})
    [echo] = manager.tools()
    assert echo.context_arg is not None
    with pytest.raises(ToolError) as caught:
        echo.func(text="hi", **{echo.context_arg: CallContext()})
    assert caught.value.one_line() == "MCP server h: the server sent a reply over the 16 MiB line limit"
    assert echo.func(text="again", **{echo.context_arg: CallContext()}) == "echo: again"
    assert [status.state for status in manager.status()] == ["ready"]


def test_another_line_over_the_limit_ends_the_connection_with_one_clear_line(managers: Managers) -> None:
    manager = managers({"h": hostile("huge-line", OVER_LIMIT)})
    [echo] = manager.tools()
    assert echo.context_arg is not None
    with pytest.raises(ToolError) as caught:
        echo.func(text="hi", **{echo.context_arg: CallContext()})
    log = managers.tmp_path / "mcp-logs" / "h.log"
    reason = f"the server wrote a line over the 16 MiB line limit to stdout (its stderr is in {log})"
    assert caught.value.one_line() == f"MCP server h stopped: {reason} (it restarts on the next call)"
    assert [(status.state, status.last_error) for status in manager.status()] == [("crashed", reason)]
    [pid] = processes_in(managers.tmp_path)
    manager.close()
    assert wait_for(lambda: process_gone(pid), 20)


def test_a_stderr_flood_is_cut_in_the_log_and_the_server_keeps_serving(managers: Managers) -> None:
    manager = managers({"h": hostile("stderr-flood", 5_000_000)})
    [echo] = manager.tools()
    assert echo.context_arg is not None
    for text in ("one", "two"):  # past the pipe's buffer: a server nobody drains would block
        assert echo.func(text=text, **{echo.context_arg: CallContext()}) == f"echo: {text}"
    manager.close()
    log = (managers.tmp_path / "mcp-logs" / "h.log").read_text(encoding="utf-8")
    assert MAX_LOG_BYTES < len(log) < MAX_LOG_BYTES + 1000
    assert "starting h\nnoise noise" in log
    assert log.endswith("\n--- output past 1,000,000 characters dropped until the next start\n")


def test_the_last_line_before_a_crash_reaches_the_error_even_past_the_cap(managers: Managers) -> None:
    manager = managers({"h": hostile("flood-at-start", 3_000_000)})
    assert manager.tools() == []
    expected = "the server closed the connection (it exited); stderr: Error: last words"
    assert [(status.state, status.last_error) for status in manager.status()] == [("failed", expected)]
    assert (managers.tmp_path / "mcp-logs" / "h.log").stat().st_size < MAX_LOG_BYTES + 1000


def test_a_log_grown_too_big_moves_aside_at_a_restart_too(tmp_path: Path) -> None:
    logs = ServerLogs(tmp_path)
    logs.open("s").write("x" * (MAX_LOG_BYTES + 10) + "\n")
    logs.open("s").write("after the restart\n")  # a crashed server restarted within one session
    logs.close()
    assert (tmp_path / "s.log.old").stat().st_size > MAX_LOG_BYTES
    assert (tmp_path / "s.log").read_text(encoding="utf-8").endswith(" starting s\nafter the restart\n")


def test_a_disk_filling_up_while_a_server_runs_loses_its_stderr_not_the_server() -> None:
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full (Linux), a device every write to fails with ENOSPC")
    with open("/dev/full", "w", encoding="utf-8") as full:
        stderr = ServerLog(full)
        for _ in range(3):
            stderr.write("Error: disk trouble\n" * 1000)
        assert stderr.error == "No space left on device"
        assert stderr.last_line() == "Error: disk trouble"
