"""Servers that break the protocol (tests/mcp/hostile_server.py): one clear line, nothing lost."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp_helpers import Managers

from nanohermes.config.mcp_config import McpServerConfig
from nanohermes.core.errors import ToolError
from nanohermes.mcp.tools import MAX_DESCRIPTION_CHARS, MAX_SCHEMA_CHARS
from nanohermes.tools.base import CallContext

pytestmark = pytest.mark.timeout(60)
HOSTILE = Path(__file__).with_name("hostile_server.py")


def hostile(mode: str, tool_timeout: float = 20) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=(str(HOSTILE), mode), tool_timeout=tool_timeout)


def test_an_invalid_result_is_a_one_line_tool_error_and_the_server_keeps_serving(managers: Managers) -> None:
    manager = managers({"h": hostile("bad-content")})
    [echo] = manager.tools()
    assert echo.context_arg is not None
    for where in ("content: Input should be a valid list", "content.1: matches none of the kinds"):
        with pytest.raises(ToolError) as caught:
            echo.func(text="hi", **{echo.context_arg: CallContext()})
        message = caught.value.one_line()
        assert message.startswith("MCP server h: the server sent an invalid CallToolResult: ")
        assert where in message
        assert "pydantic.dev" not in message
    assert echo.func(text="again", **{echo.context_arg: CallContext()}) == "echo: again"
    assert [status.state for status in manager.status()] == ["ready"]


def test_an_invalid_tool_listing_fails_the_server_with_one_clear_line(managers: Managers) -> None:
    manager = managers({"h": hostile("bad-listing")})
    assert manager.tools() == []
    [status] = manager.status()
    assert status.state == "failed"
    expected = (
        "the server sent an invalid ListToolsResult: tools.0.inputSchema.type: Input should be 'object'"
    )
    assert status.last_error == expected
    assert managers.notices == [f"MCP server h failed to start: {expected}"]


def test_bytes_that_are_not_utf8_on_stdout_do_not_lose_the_replies_after_them(managers: Managers) -> None:
    manager = managers({"h": hostile("stray-bytes", tool_timeout=5)})
    [echo] = manager.tools()
    assert echo.context_arg is not None
    for text in ("one", "two"):
        assert echo.func(text=text, **{echo.context_arg: CallContext()}) == f"echo: {text}"
    assert [status.state for status in manager.status()] == ["ready"]


def test_a_lone_surrogate_in_a_listing_or_a_result_becomes_a_replacement_character(
    managers: Managers,
) -> None:
    manager = managers({"h": hostile("surrogates", tool_timeout=5)})
    [echo] = manager.tools()
    assert echo.context_arg is not None
    assert echo.description == "Echo \ufffd"
    text = echo.func(text="hi", **{echo.context_arg: CallContext()})
    assert text == "echo: hi\ufffd"
    text.encode("utf-8")  # what goes to the model and the session file must encode
    assert managers.notices == []


def test_descriptions_are_cut_and_a_tool_with_a_huge_schema_is_left_out_with_one_notice(
    managers: Managers,
) -> None:
    manager = managers({"h": hostile("oversized")})
    [echo] = manager.tools()
    assert echo.name == "mcp__h__echo"
    assert len(echo.description) == MAX_DESCRIPTION_CHARS
    assert echo.description.endswith("d…")
    [status] = manager.status()
    assert [tool.name for tool in status.tools] == ["mcp__h__echo"]
    assert len(status.tools[0].description) == MAX_DESCRIPTION_CHARS
    expected = f"left out 1 tool (input schema over {MAX_SCHEMA_CHARS:,} characters): huge"
    assert status.last_error == expected  # what `mcp list` shows: it hears no notices
    assert managers.notices == [f"MCP server h: {expected}"]
