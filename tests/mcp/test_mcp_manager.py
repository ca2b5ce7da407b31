"""McpManager against real MCP servers (tests/mcp/demo_server.py) run as subprocesses."""

from __future__ import annotations

import asyncio
import concurrent.futures
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from mcp_helpers import DEMO, Managers, demo_stdio, process_gone, wait_for

from nanohermes.config.mcp_config import McpServerConfig
from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import Cancelled, ToolError
from nanohermes.tools.base import CallContext, Tool

pytestmark = pytest.mark.timeout(90)


def tools_by_name(tools: list[Tool]) -> dict[str, Tool]:
    return {tool.name: tool for tool in tools}


def call(tool: Tool, cancel: CancelToken | None = None, **arguments: object) -> str:
    assert tool.context_arg is not None
    return str(tool.func(**arguments, **{tool.context_arg: CallContext(cancel or CancelToken())}))


def test_tools_offered_with_names_schemas_and_access(managers: Managers) -> None:
    manager = managers({"demo": demo_stdio()})
    tools = tools_by_name(manager.tools())
    assert {"mcp__demo__echo", "mcp__demo__write_note", "mcp__demo__hang"} <= set(tools)
    echo = tools["mcp__demo__echo"]
    assert echo.description == "Echo the text back."
    assert echo.parameters["type"] == "object"
    assert echo.parameters["properties"]["text"]["type"] == "string"
    assert echo.parameters["required"] == ["text"]
    assert echo.schema()["function"]["name"] == "mcp__demo__echo"
    assert not echo.mutating  # readOnlyHint: true
    assert tools["mcp__demo__write_note"].mutating
    assert not tools["mcp__demo__write_note"].preapproved
    [status] = manager.status()
    assert (status.name, status.state, status.transport, status.last_error) == ("demo", "ready", "stdio", "")
    assert {info.name for info in status.tools} >= {"mcp__demo__echo", "mcp__demo__write_note"}


def test_results_text_structured_image_and_error(managers: Managers) -> None:
    tools = tools_by_name(managers({"demo": demo_stdio()}).tools())
    assert call(tools["mcp__demo__echo"], text="hi") == "echo: hi"
    assert '"sum": 5' in call(tools["mcp__demo__add"], a=2, b=3)
    assert call(tools["mcp__demo__picture"]) == "[image: image/png, 70 bytes]"
    with pytest.raises(ToolError, match="the disk is full"):
        call(tools["mcp__demo__fail"], message="the disk is full")


def test_missing_and_broken_servers_next_to_a_working_one(managers: Managers) -> None:
    manager = managers(
        {
            "gone": McpServerConfig(command="nanohermes-no-such-mcp-server"),
            "broken": demo_stdio(None, "--exit-at-start"),
            "demo": demo_stdio(),
        }
    )
    tools = tools_by_name(manager.tools())
    assert call(tools["mcp__demo__echo"], text="still here") == "echo: still here"
    assert not [name for name in tools if name.startswith(("mcp__gone__", "mcp__broken__"))]
    states = {s.name: s for s in manager.status()}
    assert states["gone"].state == "failed"
    assert "command not found: nanohermes-no-such-mcp-server" in states["gone"].last_error
    assert states["broken"].state == "failed"
    assert "demo: cannot open the database" in states["broken"].last_error  # its stderr's last line
    assert len(managers.notices) == 2
    assert any(n.startswith("MCP server gone failed to start: command not found") for n in managers.notices)


def test_a_server_that_hangs_at_start_fails_after_startup_timeout(managers: Managers) -> None:
    manager = managers(
        {"slow": demo_stdio(None, "--start-delay", "60", startup_timeout=1), "demo": demo_stdio()}
    )
    assert {s.name: s.state for s in manager.status()}["slow"] == "starting"  # start() did not wait
    assert "mcp__demo__echo" in tools_by_name(manager.tools())
    slow = {s.name: s for s in manager.status()}["slow"]
    assert slow.state == "failed"
    assert "did not answer within 1 s" in slow.last_error


def test_crash_mid_session_restarts_on_the_next_call(managers: Managers, markers: Path) -> None:
    manager = managers({"demo": demo_stdio(markers)})
    tools = tools_by_name(manager.tools())
    first_pid = int(call(tools["mcp__demo__pid"]))
    with pytest.raises(ToolError, match="MCP server demo stopped: the server exited"):
        call(tools["mcp__demo__crash"])
    assert {s.name: s.state for s in manager.status()}["demo"] == "crashed"
    assert "mcp__demo__echo" in tools_by_name(manager.tools())  # still offered: the next call restarts it
    assert call(tools["mcp__demo__echo"], text="back") == "echo: back"
    assert int(call(tools["mcp__demo__pid"])) != first_pid
    assert any("restarted" in notice for notice in managers.notices)


def test_hanging_call_is_cancelled_and_the_server_told(managers: Managers, markers: Path) -> None:
    tools = tools_by_name(managers({"demo": demo_stdio(markers)}).tools())
    cancel = CancelToken()
    outcome: list[BaseException | str] = []

    def run() -> None:
        try:
            outcome.append(call(tools["mcp__demo__hang"], cancel, seconds=60))
        except BaseException as err:
            outcome.append(err)

    worker = threading.Thread(target=run)
    worker.start()
    assert not wait_for(lambda: bool(outcome), 0.5)  # it hangs
    cancel.cancel()
    worker.join(10)
    assert len(outcome) == 1
    assert isinstance(outcome[0], Cancelled)
    assert wait_for(lambda: (markers / "cancelled").exists())  # notifications/cancelled reached it
    assert call(tools["mcp__demo__echo"], text="after") == "echo: after"


def test_a_changed_tool_list_is_listed_again(managers: Managers) -> None:
    manager = managers({"demo": demo_stdio()})
    assert call(tools_by_name(manager.tools())["mcp__demo__grow"], name="fresh") == "added fresh"
    assert wait_for(lambda: "mcp__demo__fresh" in tools_by_name(manager.tools()))  # list_changed heard
    assert call(tools_by_name(manager.tools())["mcp__demo__fresh"]) == "fresh is new"
    [status] = manager.status()
    assert "mcp__demo__fresh" in {info.name for info in status.tools}
    assert managers.notices == []


def test_config_variables_expand_and_a_missing_one_fails_that_server_only(
    managers: Managers, markers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NH_TEST_MARKERS", str(markers))
    monkeypatch.delenv("NH_TEST_UNSET", raising=False)
    expanded = McpServerConfig(command=sys.executable, args=(str(DEMO), "--marker-dir", "${NH_TEST_MARKERS}"))
    missing = McpServerConfig(command=sys.executable, args=(str(DEMO),), env={"TOKEN": "${NH_TEST_UNSET}"})
    manager = managers({"expanded": expanded, "missing": missing})
    assert "mcp__expanded__echo" in tools_by_name(manager.tools())
    assert (markers / "server.pid").exists()  # it got the expanded --marker-dir
    states = {s.name: s for s in manager.status()}
    assert states["missing"].state == "failed"
    assert (
        states["missing"].last_error == "environment variable NH_TEST_UNSET is not set (its config uses it)"
    )
    assert managers.notices == [f"MCP server missing failed to start: {states['missing'].last_error}"]


def test_only_the_tools_the_config_lets_through_are_offered(managers: Managers) -> None:
    config = demo_stdio(enabled_tools=("echo", "add", "write_note"), disabled_tools=("write_note",))
    manager = managers({"demo": config})
    assert set(tools_by_name(manager.tools())) == {"mcp__demo__echo", "mcp__demo__add"}
    assert [info.name for info in manager.status()[0].tools] == ["mcp__demo__echo", "mcp__demo__add"]


def test_tool_timeout(managers: Managers, markers: Path) -> None:
    tools = tools_by_name(managers({"demo": demo_stdio(markers, tool_timeout=0.5)}).tools())
    with pytest.raises(ToolError, match=r"hang on MCP server demo timed out after 0.5 s"):
        call(tools["mcp__demo__hang"], seconds=60)
    assert wait_for(lambda: (markers / "cancelled").exists())


def test_close_leaves_no_process(managers: Managers, markers: Path) -> None:
    manager = managers({"demo": demo_stdio(markers), "other": demo_stdio()})
    tools = tools_by_name(manager.tools())
    server_pid = int(call(tools["mcp__demo__pid"]))
    child_pid = int(call(tools["mcp__demo__spawn_child"]))
    other_pid = int(call(tools["mcp__other__pid"]))
    assert not process_gone(child_pid)
    manager.close()
    assert wait_for(lambda: all(process_gone(pid) for pid in (server_pid, child_pid, other_pid)))
    assert {s.state for s in manager.status()} == {"closed"}
    with pytest.raises(ToolError, match="not running"):
        call(tools["mcp__demo__echo"], text="x")


def test_a_call_running_at_close_is_answered(managers: Managers) -> None:
    manager = managers({"demo": demo_stdio()})
    manager.wait_started(30)
    running = manager.submit("demo", "hang", {"seconds": 60})
    manager.close()
    with pytest.raises((ToolError, concurrent.futures.CancelledError)):  # not a wait for ever
        running.result(10)


def test_close_while_a_server_is_still_starting(managers: Managers, markers: Path) -> None:
    manager = managers({"slow": demo_stdio(markers, "--start-delay", "60")})
    assert wait_for(lambda: (markers / "server.pid").exists(), 30)
    manager.close()
    assert wait_for(lambda: process_gone(int((markers / "server.pid").read_text())))
    assert manager.tools() == []
    assert managers.notices == []  # closing is not a failure worth a notice


def test_disabled_server_is_not_started(managers: Managers) -> None:
    manager = managers({"off": demo_stdio(enabled=False)})
    assert manager.tools() == []
    assert [(s.name, s.state) for s in manager.status()] == [("off", "disabled")]


def test_streamable_http_server(managers: Managers, http_demo: str) -> None:
    manager = managers({"web": McpServerConfig(url=http_demo, headers={"X-Test": "1"})})
    tools = tools_by_name(manager.tools())
    assert call(tools["mcp__web__echo"], text="over http") == "echo: over http"
    assert manager.status()[0].transport == "http"
    call(tools["mcp__web__grow"], name="late")
    assert wait_for(lambda: "mcp__web__late" in tools_by_name(manager.tools()))  # its change stream
    manager.close()  # before the server stops: it would wait for that stream to end


def test_unreachable_http_server_fails_with_one_line(managers: Managers) -> None:
    manager = managers({"web": McpServerConfig(url="http://127.0.0.1:9/mcp", startup_timeout=5)})
    assert manager.tools() == []
    [status] = manager.status()
    assert status.state == "failed"
    assert status.last_error
    assert "\n" not in status.last_error


def test_sdk_is_imported_only_when_a_server_starts() -> None:
    code = (
        "import sys\n"
        "import nanohermes.app.wiring, nanohermes.mcp.manager, nanohermes.config.settings\n"
        "print('mcp' in sys.modules, 'asyncio' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.split()[0] == "False"


def test_the_older_change_notification_is_heard_too(tmp_path: Path) -> None:
    """Servers on protocols before 2026-07-28 send notifications/tools/list_changed unasked."""
    import mcp_types

    from nanohermes.mcp.connection import Connection

    heard: list[str] = []
    connection = Connection(
        "old", demo_stdio(), cwd=tmp_path, errlog=sys.stderr, on_tools_changed=lambda: heard.append("x")
    )
    asyncio.run(connection._on_message(mcp_types.ToolListChangedNotification()))
    asyncio.run(connection._on_message(mcp_types.ResourceListChangedNotification()))
    assert heard == ["x"]
