"""The tool-call accumulator's rules in isolation, and calls written as text."""

from __future__ import annotations

import json
from typing import Any

from nanohermes.llm import ToolCallAccumulator, extract_text_tool_calls


def _delta(
    index: int | None = None, id: str | None = None, name: str | None = None, args: Any = None
) -> dict[str, Any]:
    delta: dict[str, Any] = {"function": {}}
    if index is not None:
        delta["index"] = index
    if id is not None:
        delta["id"] = id
    if name is not None:
        delta["function"]["name"] = name
    if args is not None:
        delta["function"]["arguments"] = args
    return delta


def _calls(*deltas: dict[str, Any]) -> list[tuple[str, str, str]]:
    acc = ToolCallAccumulator(new_id=iter(f"gen_{n}" for n in range(100)).__next__)
    for delta in deltas:
        acc.add(delta)
    return [(c.id, c.name, c.arguments) for c in acc.calls()]


def test_parallel_calls_by_index_interleaved() -> None:
    got = _calls(
        _delta(0, "a", "f", '{"x"'),
        _delta(1, "b", "g", '{"y"'),
        _delta(0, args=": 1}"),
        _delta(1, args=": 2}"),
    )
    assert got == [("a", "f", '{"x": 1}'), ("b", "g", '{"y": 2}')]


def test_missing_ids_are_synthesised() -> None:
    assert _calls(_delta(0, name="f", args="{}")) == [("gen_0", "f", "{}")]


def test_same_tool_twice_at_index_zero_without_ids() -> None:
    got = _calls(_delta(0, name="read", args='{"p": 1}'), _delta(0, name="read", args='{"p": 2}'))
    assert got == [("gen_0", "read", '{"p": 1}'), ("gen_1", "read", '{"p": 2}')]


def test_trailing_repeat_of_the_name_does_not_make_a_call() -> None:
    assert _calls(_delta(0, name="read", args='{"p": 1}'), _delta(0, name="read", args="")) == [
        ("gen_0", "read", '{"p": 1}')
    ]


def test_fresh_id_repeating_the_name_continues_an_unfinished_call() -> None:
    got = _calls(_delta(0, "id1", "shell", '{"cmd": '), _delta(0, "id2", "shell", '"ls"}'))
    assert got == [("id1", "shell", '{"cmd": "ls"}')]


def test_no_argument_calls_of_the_same_tool_stay_separate() -> None:
    got = _calls(_delta(0, "a", "now", "{}"), _delta(0, "b", "now", "{}"))
    assert got == [("a", "now", "{}"), ("b", "now", "{}")]


def test_arguments_sent_as_an_object() -> None:
    got = _calls(_delta(0, "a", "f", {"k": "v"}))
    assert json.loads(got[0][2]) == {"k": "v"}


def test_brace_inside_a_string_does_not_end_a_call_early() -> None:
    got = _calls(_delta(0, "a", "w", '{"t": "x}'), _delta(0, "b", "", ' y"}'))
    assert got == [("a", "w", '{"t": "x} y"}')]


def test_empty_deltas_make_no_call() -> None:
    assert _calls(_delta(0), _delta(0, args="")) == []


def test_invalid_json_arguments_are_kept_verbatim_for_the_tool_layer() -> None:
    assert _calls(_delta(0, "a", "f", "{not json")) == [("a", "f", "{not json")]


TOOLS = {"read_file", "run_shell"}


def test_tagged_calls_are_extracted_and_removed() -> None:
    text = 'Let me check.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>'
    rest, calls = extract_text_tool_calls(text, TOOLS)
    assert rest == "Let me check."
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("read_file", {"path": "a.py"})]
    assert calls[0].id.startswith("call_")


def test_several_tags_and_an_unclosed_last_tag() -> None:
    text = (
        '<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>\n'
        '<tool_call>{"name": "run_shell", "arguments": "{\\"command\\": \\"ls\\"}"}'
    )
    rest, calls = extract_text_tool_calls(text, TOOLS)
    assert rest == ""
    assert [c.name for c in calls] == ["read_file", "run_shell"]
    assert calls[1].arguments == '{"command": "ls"}'
    assert calls[0].id != calls[1].id


def test_bare_and_fenced_json_calls() -> None:
    for text in (
        '{"name": "run_shell", "arguments": {"command": "pwd"}}',
        '```json\n{"name": "run_shell", "parameters": {"command": "pwd"}}\n```',
        '[{"type": "function", "function": {"name": "run_shell", "arguments": {"command": "pwd"}}}]',
    ):
        rest, calls = extract_text_tool_calls(text, TOOLS)
        assert rest == ""
        assert [(c.name, json.loads(c.arguments)) for c in calls] == [("run_shell", {"command": "pwd"})]


def test_text_that_is_not_a_call_is_left_alone() -> None:
    for text in (
        "plain answer",
        '{"name": "delete_everything", "arguments": {}}',  # not an offered tool
        '{"name": "read_file"}',  # bare JSON without arguments is just data
        "<tool_call>not json</tool_call>",
        'Example: {"name": "read_file", "arguments": {}} is how you call it.',
    ):
        assert extract_text_tool_calls(text, TOOLS) == (text, [])
