"""A stream that ends without a finish reason or [DONE] never yields its tool calls."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from llm_helpers import Recorder, completion, fixture_bytes, make_client, run_stream, sse_lines, sse_response

from nanohermes.core.errors import BadResponse, ContextOverflow, IncompleteStream
from nanohermes.core.events import Retrying, TextDelta
from nanohermes.core.types import ChatResult


def _cut_stream() -> httpx.Response:
    return sse_response(fixture_bytes("cut_mid_call.sse"))


def test_stream_cut_mid_call_yields_no_call_and_retries_without_streaming() -> None:
    fallback = completion("I will not run that.")
    recorder = Recorder(_cut_stream(), httpx.Response(200, json=fallback))
    items, result = run_stream(make_client(recorder))
    assert result.tool_calls == []
    assert result.content == "I will not run that."
    assert [b["stream"] for b in recorder.bodies] == [True, False]
    assert any(isinstance(i, Retrying) and "without streaming" in i.reason for i in items)
    assert TextDelta("I will not run that.") in items


def test_the_fallback_answer_provides_the_calls_not_the_cut_stream() -> None:
    call = {
        "id": "call_ok",
        "type": "function",
        "function": {"name": "run_shell", "arguments": '{"command": "ls"}'},
    }
    recorder = Recorder(_cut_stream(), httpx.Response(200, json=completion("", [call])))
    _, result = run_stream(make_client(recorder))
    assert [(c.id, c.arguments) for c in result.tool_calls] == [("call_ok", '{"command": "ls"}')]


def test_when_the_fallback_fails_too_a_clear_error_is_raised_and_no_call_escapes() -> None:
    recorder = Recorder(_cut_stream(), httpx.Response(400, json={"error": {"message": "tools unsupported"}}))
    client = make_client(recorder)
    seen: list[object] = []
    with pytest.raises(IncompleteStream) as caught:
        seen.extend(client.stream([{"role": "user", "content": "hi"}]))
    assert not any(isinstance(item, ChatResult) for item in seen)
    message = caught.value.one_line()
    assert "ended before the answer was complete" in message
    assert "tools unsupported" in message
    assert len(recorder.requests) == 2


def test_text_only_stream_without_end_is_also_incomplete() -> None:
    body = sse_lines([{"choices": [{"index": 0, "delta": {"content": "half an ans"}}]}])
    recorder = Recorder(sse_response(body), httpx.Response(200, json=completion("a whole answer")))
    _, result = run_stream(make_client(recorder))
    assert result.content == "a whole answer"


def test_connection_dropped_mid_stream_is_incomplete() -> None:
    def chunks() -> Iterator[bytes]:
        yield b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":'
        yield b'{"name":"write_file","arguments":"{\\"path\\": \\"x\\"}"}}]}}]}\n\n'
        raise httpx.ReadError("connection reset by peer")

    recorder = Recorder(
        httpx.Response(200, content=chunks(), headers={"content-type": "text/event-stream"}),
        httpx.Response(200, json=completion("retried")),
    )
    _, result = run_stream(make_client(recorder))
    assert result.tool_calls == []
    assert result.content == "retried"


def test_drop_after_finish_reason_loses_nothing() -> None:
    def chunks() -> Iterator[bytes]:
        yield b'data: {"choices":[{"index":0,"delta":{"content":"done"},"finish_reason":"stop"}]}\n\n'
        raise httpx.ReadError("connection reset by peer")

    recorder = Recorder(httpx.Response(200, content=chunks(), headers={"content-type": "text/event-stream"}))
    _, result = run_stream(make_client(recorder))
    assert result.content == "done"
    assert len(recorder.requests) == 1


class EndlessBody:
    """A response whose body never ends: `head`, then `filler` for ever, each piece 10 s later on a
    fake clock; `client` has a 300 s total deadline on that clock."""

    def __init__(self, status: int, content_type: str, filler: bytes, head: bytes = b"") -> None:
        self.now = 0.0

        def body() -> Iterator[bytes]:
            if head:
                yield head
            while True:
                self.now += 10.0
                yield filler

        headers = {"content-type": content_type}
        self.recorder = Recorder(httpx.Response(status, content=body(), headers=headers))
        self.client = make_client(self.recorder, total_timeout=300.0, clock=lambda: self.now)

    def assert_stopped_at_the_deadline(self) -> None:
        assert 300.0 <= self.now <= 320.0
        assert len(self.recorder.requests) == 1  # and not retried


def test_total_deadline_ends_an_endless_keep_alive_stream() -> None:
    endless = EndlessBody(200, "text/event-stream", b": keep-alive\n\n")
    with pytest.raises(IncompleteStream) as caught:
        list(endless.client.stream([{"role": "user", "content": "hi"}]))
    assert "300 s total deadline" in str(caught.value)
    endless.assert_stopped_at_the_deadline()


def test_context_overflow_on_the_fallback_is_not_hidden() -> None:
    overflow = httpx.Response(400, json={"error": {"message": "maximum context length exceeded"}})
    recorder = Recorder(sse_response(fixture_bytes("cut_mid_call.sse")), overflow)
    with pytest.raises(ContextOverflow):
        run_stream(make_client(recorder))


def test_llama_cpp_python_silent_tool_stream_then_its_non_streamed_call() -> None:
    """Recorded from llama-cpp-python 0.3 (chatml-function-calling, tool_choice auto): when the model
    picks a tool, the streamed answer is HTTP 200 text/event-stream with an EMPTY body; the
    non-streamed retry has content null, an id like call__0_<name>_cmpl-…, arguments with a trailing
    space, and a legacy `function_call` whose name ends in a colon."""
    arguments = '{"path": "README.md"} '
    message = {
        "content": None,
        "tool_calls": [
            {
                "id": "call__0_read_file_cmpl-56effa77",
                "type": "function",
                "function": {"name": "read_file", "arguments": arguments},
            }
        ],
        "role": "assistant",
        "function_call": {"name": "read_file:", "arguments": arguments},
    }
    fallback = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 212, "completion_tokens": 9, "total_tokens": 221},
    }
    recorder = Recorder(sse_response(b""), httpx.Response(200, json=fallback))
    items, result = run_stream(
        make_client(recorder), tools=[{"type": "function", "function": {"name": "read_file"}}]
    )
    assert any(isinstance(item, Retrying) for item in items)
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("call__0_read_file_cmpl-56effa77", "read_file", arguments)
    ]
    assert result.content == ""
    assert result.usage.total_tokens == 221


def test_a_cut_stream_sent_to_a_non_streaming_request_is_not_trusted_either() -> None:
    """A server that streams although asked not to, and whose stream is cut: complete() must not hand
    back the half call, and neither must the non-streaming retry of stream()."""
    with pytest.raises(IncompleteStream) as caught:
        make_client(Recorder(_cut_stream())).complete([{"role": "user", "content": "hi"}])
    assert "http://llm.test/v1/chat/completions" in str(caught.value)
    recorder = Recorder(_cut_stream(), _cut_stream())
    seen: list[object] = []
    with pytest.raises(IncompleteStream):
        seen.extend(make_client(recorder).stream([{"role": "user", "content": "hi"}]))
    assert not any(isinstance(item, ChatResult) for item in seen)
    assert [b["stream"] for b in recorder.bodies] == [True, False]


def test_total_deadline_ends_an_error_body_that_never_ends() -> None:
    """A hostile or stuck server answers 400 and then trickles its error body: reading it stops
    at the total deadline (not after 64 KB of trickle), and the error keeps what arrived."""
    endless = EndlessBody(400, "application/json", b" ", head=b'{"error": {"message": "bad request"}}')
    with pytest.raises(BadResponse) as caught:
        list(endless.client.stream([{"role": "user", "content": "hi"}]))
    assert "bad request" in str(caught.value)
    endless.assert_stopped_at_the_deadline()
