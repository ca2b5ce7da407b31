"""What model APIs refuse (a whole request, every tool), repaired: server schemas, names, too many tools."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any
from unittest.mock import patch

import pytest
from mcp_helpers import Managers, demo_stdio

from nanohermes.config.mcp_config import McpServerConfig, tool_name
from nanohermes.mcp.tools import build_tools, normalize_schema, offered
from nanohermes.tools.base import Tool


def test_top_level_combinators_lend_their_properties() -> None:
    either = {
        "type": "object",
        "properties": {"verbose": {"type": "boolean"}},
        "anyOf": [
            {"properties": {"path": {"type": "string"}}, "required": ["path"]},
            {"properties": {"url": {"type": "string"}}, "required": ["url"]},
        ],
        "allOf": [{"properties": {"mode": {"enum": ["a", "b"]}}, "required": ["mode"]}],
        "enum": [{}],
        "not": {"required": ["never"]},
    }
    assert normalize_schema(either) == {
        "type": "object",
        "properties": {
            "verbose": {"type": "boolean"},
            "path": {"type": "string"},
            "url": {"type": "string"},
            "mode": {"enum": ["a", "b"]},
        },
        "required": ["mode"],
    }


def test_arrays_get_items_and_boolean_subschemas_become_objects_all_the_way_down() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array"},
            "maybe": {"type": ["array", "null"]},
            "anything": True,
            "nested": {
                "type": "object",
                "properties": {"rows": {"type": "array", "items": {"type": "array"}}},
                "additionalProperties": {"type": "array"},
            },
            "choice": {"anyOf": [{"type": "array"}, {"type": "string"}]},
        },
        "$defs": {"List": {"type": "array"}},
    }
    props = normalize_schema(schema)["properties"]
    assert props["tags"] == {"type": "array", "items": {}}
    assert props["maybe"] == {"type": ["array", "null"], "items": {}}
    assert props["anything"] == {}
    assert props["nested"]["properties"]["rows"] == {"type": "array", "items": {"type": "array", "items": {}}}
    assert props["nested"]["additionalProperties"] == {"type": "array", "items": {}}
    assert props["choice"] == {"anyOf": [{"type": "array", "items": {}}, {"type": "string"}]}
    assert normalize_schema(schema)["$defs"] == {"List": {"type": "array", "items": {}}}
    assert schema["properties"]["tags"] == {"type": "array"}  # the server's listing is not changed


def test_a_call_to_a_tool_with_a_boolean_property_schema_is_checked_not_crashed() -> None:
    class Spec:
        name, description, read_only = "t", "d", True
        input_schema: dict[str, Any] = {"type": "object", "properties": {"x": True, "n": {"type": "integer"}}}

    def never(*_args: object) -> Future[str]:
        raise AssertionError("not called")

    [tool] = build_tools("s", McpServerConfig(command="x"), [Spec()], never)
    assert tool.parse_arguments('{"x": [1, "two"], "n": "3"}') == {"x": [1, "two"], "n": 3}


def _tool(name: str) -> Tool:
    return Tool(name, "d", {"type": "object", "properties": {}}, lambda **_: "", approval_kind=name)


def test_names_stay_apart_across_servers_and_long_ones_keep_a_distinct_end() -> None:
    long_a, long_b = tool_name("server", "x" * 80 + "a"), tool_name("server", "x" * 80 + "b")
    assert len(long_a) == len(long_b) == 64
    assert long_a != long_b  # cut to 64 they were the same
    assert tool_name("a", "b__c") == tool_name("a__b", "c") == "mcp__a__b__c"
    tools, left_out = offered([("a", [_tool("mcp__a__b__c")]), ("a__b", [_tool("mcp__a__b__c")])], 100)
    first, second = tools
    assert first.name == "mcp__a__b__c"
    assert second.name.startswith("mcp__a__b__c_")
    assert second.approval_kind == second.name
    assert left_out == 0


@pytest.mark.timeout(90)
def test_past_the_limit_tools_are_left_out_and_the_user_told_once(managers: Managers) -> None:
    tools, left_out = offered([("s", [_tool(f"mcp__s__t{n}") for n in range(130)])], 100)
    assert (len(tools), left_out) == (100, 30)
    manager = managers({"demo": demo_stdio(), "other": demo_stdio()})
    with patch("nanohermes.mcp.manager.MAX_TOOLS", 15):
        assert len(manager.tools()) == 15
        assert len(manager.tools()) == 15
    [notice] = managers.notices
    assert "only the first 15 are offered" in notice
