"""Hostile or broken replies: JSON nested too deep for the decoder, tool-call ids used twice. Each gives
a clear error or a valid set of calls, never a traceback or two calls merged into one."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from llm_helpers import make_client, run_stream, sse_response

from nanohermes.core.errors import BadResponse
from nanohermes.llm import ToolCallAccumulator, extract_text_tool_calls
from nanohermes.llm.sse import iter_chunks

DEEP = "[" * 100_000 + "]" * 100_000
"""Valid JSON that Python's decoder cannot take: it raises RecursionError, not ValueError."""


def test_a_stream_event_nested_too_deep_is_a_bad_response() -> None:
    with pytest.raises(BadResponse) as caught:
        list(iter_chunks([f'data: {{"choices": {DEEP}}}', ""]))
    assert "\n" not in caught.value.one_line()


def test_an_error_event_nested_too_deep_is_still_an_error_chunk() -> None:
    chunks = list(iter_chunks(["event: error", f"data: {DEEP}", ""]))
    assert len(chunks) == 1
    assert isinstance(chunks[0], dict)
    assert chunks[0]["error"]


def test_a_json_answer_nested_too_deep_is_a_bad_response() -> None:
    body = f'{{"choices": {DEEP}}}'.encode()
    client = make_client(
        lambda _: httpx.Response(200, content=body, headers={"content-type": "application/json"})
    )
    with pytest.raises(BadResponse):
        client.complete([{"role": "user", "content": "hi"}])


def _call_delta(index: int, call_id: str | None, name: str | None, args: str) -> dict[str, Any]:
    delta: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if call_id is not None:
        delta["id"] = call_id
    if name is not None:
        delta["function"]["name"] = name
    return delta


def test_arguments_nested_too_deep_do_not_break_the_accumulator() -> None:
    acc = ToolCallAccumulator()
    acc.add(_call_delta(0, None, "read_file", '{"path": ' + DEEP + "}"))
    acc.add(_call_delta(0, "b", "grep", '{"pattern": "x"}'))  # asks whether the first call is complete
    names = [call.name for call in acc.calls()]
    assert names[-1] == "grep"


def test_a_text_form_call_nested_too_deep_is_left_as_text() -> None:
    text = '<tool_call>{"name": "read_file", "arguments": ' + DEEP + "}</tool_call>"
    assert extract_text_tool_calls(text, {"read_file"}) == (text, [])
    bare = '{"name": "read_file", "arguments": ' + DEEP + "}"
    assert extract_text_tool_calls(bare, {"read_file"}) == (bare, [])


def test_one_id_at_two_indexes_is_two_calls_with_distinct_ids() -> None:
    acc = ToolCallAccumulator(new_id=lambda: "fresh")
    acc.add(_call_delta(0, "dup", "read_file", '{"path": "a"}'))
    acc.add(_call_delta(1, "dup", "grep", '{"pattern"'))
    acc.add(_call_delta(1, None, None, ': "b"}'))
    got = [(call.id, call.name, json.loads(call.arguments)) for call in acc.calls()]
    assert got == [("dup", "read_file", {"path": "a"}), ("fresh", "grep", {"pattern": "b"})]


def test_one_id_reused_without_indexes_for_a_second_call() -> None:
    acc = ToolCallAccumulator(new_id=lambda: "fresh")
    acc.add({"id": "dup", "function": {"name": "read_file", "arguments": '{"path": "a"}'}})
    acc.add({"id": "dup", "function": {"name": "grep", "arguments": '{"pattern": "b"}'}})
    got = [(call.id, call.name) for call in acc.calls()]
    assert got == [("dup", "read_file"), ("fresh", "grep")]


def test_a_streamed_reply_with_one_id_twice_runs_two_calls() -> None:
    chunks = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [_call_delta(0, "dup", "read_file", "{}")]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [_call_delta(1, "dup", "list_files", "{}")]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    _, result = run_stream(make_client(lambda _: sse_response(body)))
    assert [call.name for call in result.tool_calls] == ["read_file", "list_files"]
    assert len({call.id for call in result.tool_calls}) == 2


def test_a_json_answer_with_one_id_twice_gets_distinct_ids() -> None:
    calls = [
        {"id": "dup", "type": "function", "function": {"name": "read_file", "arguments": "{}"}},
        {"id": "dup", "type": "function", "function": {"name": "list_files", "arguments": "{}"}},
    ]
    message = {"role": "assistant", "content": "", "tool_calls": calls}
    answer = {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
    result = make_client(lambda _: httpx.Response(200, json=answer)).complete(
        [{"role": "user", "content": "hi"}]
    )
    assert [call.name for call in result.tool_calls] == ["read_file", "list_files"]
    assert result.tool_calls[0].id == "dup"
    assert len({call.id for call in result.tool_calls}) == 2


class _CountingJson:
    """Stands in for the `json` module inside the accumulator, counting the parses."""

    def __init__(self) -> None:
        self.loads_calls = 0

    def loads(self, text: str) -> Any:
        self.loads_calls += 1
        return json.loads(text)

    def dumps(self, value: Any, **options: Any) -> str:
        return json.dumps(value, **options)


def test_many_deltas_ending_in_a_brace_are_not_parsed_again_and_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # LM Studio sends a fresh id on every chunk, so each one asks whether the call is complete; code
    # written by the model ends many chunks with `}`. Parsing the whole text each time is quadratic.
    from nanohermes.llm import accumulate

    counting = _CountingJson()
    monkeypatch.setattr(accumulate, "json", counting)
    acc = ToolCallAccumulator()
    acc.add(_call_delta(0, "c0", "write_file", '{"path": "a.js", "content": "'))
    for n in range(1, 2001):
        acc.add(_call_delta(0, f"c{n}", None, "f() {}"))
    acc.add(_call_delta(0, "last", None, '"}'))
    acc.add(_call_delta(0, "next", "read_file", '{"path": "b"}'))
    calls = acc.calls()
    assert [call.name for call in calls] == ["write_file", "read_file"]
    assert json.loads(calls[0].arguments)["content"] == "f() {}" * 2000
    assert counting.loads_calls <= 2


def test_a_lone_surrogate_in_the_history_is_sent_as_a_replacement_character() -> None:
    """A reply's JSON may hold `"\\ud800"`: json.loads gives a lone surrogate, which the history
    keeps. The next request must still be sent (it failed with UnicodeEncodeError, so the session
    could not go on), with U+FFFD in its place and every other character as it was."""
    seen: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        return sse_response('data: {"choices": [{"delta": {"content": "ok"}}]}\n\ndata: [DONE]\n\n')

    history = [
        {"role": "user", "content": "hi é"},
        {"role": "assistant", "content": json.loads('"a\\ud800b 😀"')},
        {"role": "user", "content": "again"},
    ]
    _, result = run_stream(make_client(handler), messages=history)
    assert result.content == "ok"
    sent = json.loads(seen[0].decode("utf-8"))
    assert [m["content"] for m in sent["messages"][-3:]] == ["hi é", "a\ufffdb 😀", "again"]


@pytest.mark.parametrize("arguments", [["rm", "-rf", "/"], 5, False])
def test_streamed_arguments_that_are_not_an_object_reach_the_tool_layer_as_sent(arguments: Any) -> None:
    """Not silently replaced by `{}` (which would run the tool with its defaults): the tool layer then
    refuses them ("must be a JSON object"), as it does for the same call not streamed."""
    accumulator = ToolCallAccumulator()
    accumulator.add({"index": 0, "id": "c1", "function": {"name": "bash", "arguments": arguments}})
    [call] = accumulator.calls()
    assert json.loads(call.arguments) == arguments
