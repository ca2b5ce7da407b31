"""Servers that break the protocol (tests/mcp/hostile_server.py): one clear line, nothing lost."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp_helpers import Managers

from nanohermes.cancel import CancelToken
from nanohermes.errors import ToolError
from nanohermes.mcp_config import McpServerConfig

pytestmark = pytest.mark.timeout(60)
HOSTILE = Path(__file__).with_name("hostile_server.py")


def hostile(mode: str) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=(str(HOSTILE), mode), tool_timeout=20)


def test_an_invalid_result_is_a_one_line_tool_error_and_the_server_keeps_serving(managers: Managers) -> None:
    manager = managers({"h": hostile("bad-content")})
    [echo] = manager.tools()
    assert echo.cancel_arg is not None
    for where in ("content: Input should be a valid list", "content.1: matches none of the kinds"):
        with pytest.raises(ToolError) as caught:
            echo.func(text="hi", **{echo.cancel_arg: CancelToken()})
        message = caught.value.one_line()
        assert message.startswith("MCP server h: the server sent an invalid CallToolResult: ")
        assert where in message
        assert "pydantic.dev" not in message
    assert echo.func(text="again", **{echo.cancel_arg: CancelToken()}) == "echo: again"
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
