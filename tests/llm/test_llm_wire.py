"""The outgoing request follows the rules strict servers enforce; the caller's history is untouched."""

from __future__ import annotations

import copy
import json
from typing import Any

from llm_helpers import Recorder, make_client, run_stream, sse_lines, sse_response

from nanohermes.core.types import ChatResult, ToolCall, ToolResult
from nanohermes.llm.wire import MISSING_RESULT, prepare_messages

OK = sse_lines(
    [{"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}, "data: [DONE]\n\n"]
)
ARGS = '{"path":  "a.txt",\n "n": 1.50}'  # odd spacing and number format must survive byte for byte


def _history() -> list[dict[str, Any]]:
    turn = ChatResult(content="", reasoning="thinking…", tool_calls=[ToolCall("call_1", "read_file", ARGS)])
    assistant = turn.to_message()
    assistant["content"] = None  # as some stores and servers hand it back
    return [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "read it"},
        assistant,
        ToolResult("call_1", "read_file", "contents").to_message(),
        {"role": "assistant", "content": "It says contents.", "reasoning_content": "easy"},
    ]


def _sent(history: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    recorder = Recorder(sse_response(OK))
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
    run_stream(make_client(recorder, **options), messages=history, tools=tools)
    return recorder.bodies[0]


def test_request_body_shape() -> None:
    body = _sent([{"role": "user", "content": "hi"}])
    assert body["model"] == "test-model"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"][0]["function"]["name"] == "read_file"


def test_no_tools_key_when_no_tools() -> None:
    recorder = Recorder(sse_response(OK))
    run_stream(make_client(recorder))
    assert "tools" not in recorder.bodies[0]


def test_assistant_with_calls_has_empty_string_content_and_exact_arguments() -> None:
    history = _history()
    before = copy.deepcopy(history)
    body = _sent(history)
    assistant = body["messages"][2]
    assert assistant["content"] == ""
    assert assistant["tool_calls"][0]["function"]["arguments"] == ARGS
    assert assistant["tool_calls"][0]["type"] == "function"
    assert history == before, "the caller's messages are never modified"


def test_reasoning_is_stripped_unless_send_reasoning() -> None:
    stripped = _sent(_history())
    assert all("reasoning_content" not in m and "reasoning" not in m for m in stripped["messages"])
    kept = _sent(_history(), send_reasoning=True)
    assert kept["messages"][2]["reasoning_content"] == "thinking…"
    assert kept["messages"][4]["reasoning_content"] == "easy"


def test_tool_results_are_strings() -> None:
    messages = prepare_messages(
        [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [ToolCall("a", "t").to_dict(), ToolCall("b", "t").to_dict()],
            },
            {"role": "tool", "tool_call_id": "a", "content": {"rows": [1, 2]}},
            {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "part"}]},
        ]
    )
    assert messages[1]["content"] == json.dumps({"rows": [1, 2]})
    assert messages[2]["content"] == "part"


def test_dict_or_empty_arguments_in_history_are_sent_as_json_text() -> None:
    calls = [
        {"id": "a", "type": "function", "function": {"name": "t", "arguments": {"x": 1}}},
        {"id": "b", "function": {"name": "t", "arguments": ""}},
    ]
    messages = prepare_messages(
        [
            {"role": "assistant", "content": None, "tool_calls": calls},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
        ]
    )
    sent = messages[0]["tool_calls"]
    assert [c["function"]["arguments"] for c in sent] == ['{"x": 1}', "{}"]
    assert all(c["type"] == "function" for c in sent)


def test_a_call_without_result_gets_an_error_result_right_after() -> None:
    messages = prepare_messages(
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [ToolCall("a", "t").to_dict(), ToolCall("b", "t").to_dict()],
            },
            {"role": "tool", "tool_call_id": "a", "content": "done"},
            {"role": "user", "content": "next"},
        ]
    )
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "user"]
    assert messages[3] == {"role": "tool", "tool_call_id": "b", "content": MISSING_RESULT}


def test_a_tool_result_that_answers_no_call_is_not_sent() -> None:
    call = ToolCall("a", "t").to_dict()
    messages = prepare_messages(
        [
            {"role": "user", "content": "go"},
            {"role": "tool", "tool_call_id": "a", "content": "before any call"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "a", "content": "done"},
            {"role": "tool", "tool_call_id": "zz", "content": "no such call"},
            {"role": "user", "content": "next"},
            {"role": "tool", "tool_call_id": "a", "content": "after a user message"},
        ]
    )
    assert [(m["role"], m.get("content")) for m in messages] == [
        ("user", "go"),
        ("assistant", ""),
        ("tool", "done"),
        ("user", "next"),
    ]


def test_assistant_without_calls_keeps_no_tool_calls_key_and_string_content() -> None:
    messages = prepare_messages([{"role": "assistant", "content": None, "tool_calls": []}])
    assert messages == [{"role": "assistant", "content": ""}]


def test_utf8_body_is_not_ascii_escaped() -> None:
    recorder = Recorder(sse_response(OK))
    run_stream(make_client(recorder), messages=[{"role": "user", "content": "记忆 ✓"}])
    assert "记忆 ✓".encode() in recorder.requests[0].content


def test_no_tls_set_up_for_a_plain_http_endpoint() -> None:
    import ssl

    from nanohermes.llm.transport import new_http_client as _new_http_client

    plain, secure = _new_http_client("http://127.0.0.1:8080/v1"), _new_http_client("https://api.example/v1")
    try:
        pools = [client._transport._pool for client in (plain, secure)]  # type: ignore[attr-defined]
        assert [pool._ssl_context.verify_mode for pool in pools] == [ssl.CERT_NONE, ssl.CERT_REQUIRED]
    finally:
        plain.close()
        secure.close()
