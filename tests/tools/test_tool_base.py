"""tool_from_function: the JSON schema from signature and docstring; argument checking."""

from __future__ import annotations

from typing import Literal

import pytest

from nanohermes.core.errors import ToolError
from nanohermes.tools.base import CallContext, parse_docstring, tool_from_function


def sample(
    name: str,
    count: int,
    ratio: float = 0.5,
    loud: bool = False,
    tags: list[str] | None = None,
    mode: Literal["fast", "slow"] = "fast",
    *,
    ctx: CallContext,
) -> str:
    """Do a sample thing.

    Second paragraph of the description.

    Args:
        name: who to greet
        count: how many times,
            continued on a second line
        ratio: a fraction
        loud: shout or not

    Returns:
        text
    """
    return f"{name}{count}"


def test_schema_from_signature_and_docstring() -> None:
    tool = tool_from_function(sample, mutating=True)
    assert tool.name == "sample"
    assert tool.description == "Do a sample thing.\n\nSecond paragraph of the description."
    assert tool.mutating
    assert tool.context_arg == "ctx"
    assert tool.path_arg is None  # only an argument named `path` is a workspace path
    assert tool.summary_arg == "name"
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "who to greet"},
            "count": {"type": "integer", "description": "how many times, continued on a second line"},
            "ratio": {"type": "number", "description": "a fraction", "default": 0.5},
            "loud": {"type": "boolean", "description": "shout or not", "default": False},
            "tags": {"type": "array", "items": {"type": "string"}},
            "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast"},
        },
        "required": ["name", "count"],
    }
    assert tool.schema()["type"] == "function"
    assert tool.schema()["function"]["name"] == "sample"


def test_arguments_are_checked_and_lightly_coerced() -> None:
    tool = tool_from_function(sample)
    assert tool.parse_arguments('{"name": 7, "count": "3", "loud": "true", "ratio": "0.25"}') == {
        "name": "7",
        "count": 3,
        "loud": True,
        "ratio": 0.25,
    }
    assert tool.parse_arguments('{"name": "a", "count": 2.0}')["count"] == 2
    huge = "1" + "0" * 400  # past float's range: an int all the same, neither a crash nor refused
    assert tool.parse_arguments(f'{{"name": "a", "count": {huge}, "ratio": {huge}}}') == {
        "name": "a",
        "count": 10**400,
        "ratio": 10**400,
    }
    bad = {
        '{"name": "a", "count": 2.5}': "argument count must be an integer",
        '{"name": "a", "count": 1, "mode": "medium"}': "argument mode must be one of fast, slow",
        '{"name": "a", "count": 1, "tags": "x"}': "argument tags must be an array",
        '{"name": "a", "count": true}': "argument count must be an integer",
        '{"name": "a"}': "missing required argument(s): count",
        '{"name": "a", "count": null}': "missing required argument(s): count",
        "": "missing required argument(s): name, count",
        "not json": "not valid JSON",
    }
    for raw, reason in bad.items():
        with pytest.raises(ToolError) as info:
            tool.parse_arguments(raw)
        assert reason in str(info.value), raw


def test_docstring_without_args_section() -> None:
    assert parse_docstring("Just a line.") == ("Just a line.", {})

    def bare_tool(x: str) -> str:
        return x

    tool = tool_from_function(bare_tool)
    assert tool.name == "bare_tool"
    assert tool.description == "bare tool"


def test_unsupported_annotation_is_a_programming_error() -> None:
    def odd(x: complex) -> str:
        return str(x)

    with pytest.raises(TypeError, match="no JSON schema"):
        tool_from_function(odd)
