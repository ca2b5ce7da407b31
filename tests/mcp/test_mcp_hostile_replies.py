"""More servers that break the protocol (tests/mcp/hostile_server.py): each failure is one clear line at
once, the server is not taken for crashed, the model's requests stay valid JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp_helpers import DEMO, Managers

from nanohermes.config.mcp_config import McpServerConfig
from nanohermes.core.errors import ToolError
from nanohermes.tools.base import CallContext, Tool

pytestmark = pytest.mark.timeout(60)
HOSTILE = Path(__file__).with_name("hostile_server.py")


def hostile(mode: str, tool_timeout: float = 30) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=(str(HOSTILE), mode), tool_timeout=tool_timeout)


def call(tool: Tool, text: str) -> str:
    assert tool.context_arg is not None
    result = tool.func(text=text, **{tool.context_arg: CallContext()})
    assert isinstance(result, str)
    return result


def failure(tool: Tool, text: str) -> str:
    with pytest.raises(ToolError) as caught:
        call(tool, text)
    return caught.value.one_line()


def test_a_server_error_with_code_32000_is_its_answer_not_a_crash(managers: Managers) -> None:
    """-32000 is where JSON-RPC's range for servers' own errors starts; the SDK's "connection closed"
    has that code too. The server's message is the result, and the server is not restarted."""
    manager = managers({"h": hostile("server-error")})
    [echo] = manager.tools()
    assert failure(echo, "one") == "MCP server h: database is locked"
    assert [status.state for status in manager.status()] == ["ready"]
    first = call(echo, "two")
    assert first.startswith("echo: two ")
    assert call(echo, "three").split()[-1] == first.split()[-1]  # the same process: not restarted
    assert managers.notices == []


def test_a_reply_the_sdk_cannot_parse_fails_its_call_at_once_with_the_reason(managers: Managers) -> None:
    """Nested deeper than the SDK's JSON parser allows: the reply was dropped and the call waited for
    tool_timeout, then said "timed out"."""
    manager = managers({"h": hostile("deep-reply", tool_timeout=45)})
    [echo] = manager.tools()
    message = failure(echo, "deep")
    assert message.startswith("MCP server h: the server sent a reply that is not valid JSON (")
    assert "recursion limit" in message
    assert call(echo, "again") == "echo: again"
    assert [status.state for status in manager.status()] == ["ready"]


def test_a_tool_whose_schema_holds_infinity_is_left_out_so_requests_stay_json(managers: Managers) -> None:
    """The SDK parses `Infinity`; json.dumps writes it back as `Infinity`, which no model API takes:
    every request (every turn) would be refused while the tool is offered."""
    manager = managers({"h": hostile("infinity")})
    tools = manager.tools()
    assert [tool.name for tool in tools] == ["mcp__h__echo"]
    json.dumps([tool.parameters for tool in tools], allow_nan=False)
    expected = "left out 1 tool (input schema holds NaN or Infinity, which JSON cannot carry): bounded"
    [status] = manager.status()
    assert status.last_error == expected
    assert managers.notices == [f"MCP server h: {expected}"]


def test_an_error_result_without_content_says_which_tool_failed(managers: Managers) -> None:
    manager = managers({"h": hostile("silent-error")})
    [echo] = manager.tools()
    assert failure(echo, "x") == "echo on MCP server h failed (no details)"


def test_a_working_directory_that_does_not_exist_is_named_as_such(managers: Managers, tmp_path: Path) -> None:
    """The spawn's FileNotFoundError names the directory: it read "command not found: <cwd>"."""
    missing = tmp_path / "no-such-dir"
    config = McpServerConfig(command=sys.executable, args=(str(DEMO),), cwd=missing)
    manager = managers({"d": config})
    assert manager.tools() == []
    expected = f"its working directory {missing} is not a directory (fix its cwd)"
    assert [status.last_error for status in manager.status()] == [expected]
    assert managers.notices == [f"MCP server d failed to start: {expected}"]


@pytest.mark.parametrize(
    ("line", "answers"),
    [
        ('{"jsonrpc": "2.0", "id": 7, "result": ' + "[" * 5000 + "]" * 5000 + "}", 7),
        ('{"jsonrpc":"2.0","id":"r-1","result":{"content": [}', "r-1"),
        ('{"jsonrpc": "2.0", "id": 7, "method": "x", "params": ' + "[" * 5000 + "]" * 5000 + "}", None),
        ("server listening on port 8080", None),
    ],
)
def test_only_a_reply_the_sdk_cannot_parse_is_answered_with_an_error(line: str, answers: object) -> None:
    """Nested deeper than Python's parser too, or cut off: the reply's first bytes name its request. A
    request from the server or a stray log line is left to the SDK (which drops it)."""
    import mcp_types
    from mcp.shared.message import SessionMessage
    from pydantic import ValidationError

    from nanohermes.mcp.stdio import repaired

    with pytest.raises(ValidationError) as caught:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    item = repaired(line, caught.value)
    if answers is None:
        assert item is caught.value
        return
    assert isinstance(item, SessionMessage)
    assert isinstance(item.message, mcp_types.JSONRPCError)
    assert item.message.id == answers
    assert item.message.error.message.startswith("the server sent a reply that is not valid JSON (")
