"""Retries and errors (SPEC §8), with an injected sleep and clock: nothing here waits for real."""

from __future__ import annotations

import email.utils
import json
from typing import Any

import httpx
import pytest
from llm_helpers import URL, FakeSleep, Recorder, completion, make_client, run_stream, sse_lines, sse_response

from nanohermes.core.errors import (
    BadResponse,
    ContextOverflow,
    EndpointUnreachable,
    LLMError,
    RateLimited,
    ServerError,
)
from nanohermes.core.events import Retrying

OK_STREAM = sse_lines(
    [{"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}, "data: [DONE]\n\n"]
)


def error(status: int, message: str = "nope", headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json={"error": {"message": message, "type": "x"}}, headers=headers or {})


def test_retry_after_seconds_is_honoured_exactly() -> None:
    sleep = FakeSleep()
    recorder = Recorder(error(429, "slow down", {"Retry-After": "7"}), sse_response(OK_STREAM))
    items, result = run_stream(make_client(recorder, sleep=sleep))
    assert sleep.waits == [7.0]
    assert items[0] == Retrying(attempt=1, delay=7.0, reason="HTTP 429")
    assert result.content == "ok"
    assert len(recorder.requests) == 2


def test_retry_after_ms_wins_over_retry_after() -> None:
    sleep = FakeSleep()
    headers = {"retry-after-ms": "1500", "Retry-After": "9"}
    recorder = Recorder(error(503, "busy", headers), sse_response(OK_STREAM))
    run_stream(make_client(recorder, sleep=sleep))
    assert sleep.waits == [1.5]


def test_retry_after_http_date_uses_the_wall_clock() -> None:
    sleep = FakeSleep()
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 12, usegmt=True)
    recorder = Recorder(error(429, "later", {"Retry-After": date}), sse_response(OK_STREAM))
    run_stream(make_client(recorder, sleep=sleep, wall_clock=lambda: now))
    assert sleep.waits == [pytest.approx(12.0)]


def test_retry_after_beyond_120_seconds_fails_at_once_with_the_wait_named() -> None:
    sleep = FakeSleep()
    recorder = Recorder(error(429, "daily quota", {"Retry-After": "3600"}))
    with pytest.raises(RateLimited) as caught:
        run_stream(make_client(recorder, sleep=sleep))
    assert sleep.waits == []
    assert "3600 s" in str(caught.value)
    assert len(recorder.requests) == 1


def test_backoff_is_exponential_with_jitter_and_capped_at_30s() -> None:
    sleep = FakeSleep()
    recorder = Recorder(*[error(500) for _ in range(8)], sse_response(OK_STREAM))
    items, _ = run_stream(make_client(recorder, sleep=sleep, max_retries=8, random=lambda: 0.5))
    assert sleep.waits == [0.75, 1.5, 3.0, 6.0, 12.0, 22.5, 22.5, 22.5]
    assert [i.attempt for i in items if isinstance(i, Retrying)] == list(range(1, 9))
    for jitter, first in ((0.0, 0.5), (1.0, 1.0)):
        sleep = FakeSleep()
        run_stream(
            make_client(Recorder(error(502), sse_response(OK_STREAM)), sleep=sleep, random=lambda j=jitter: j)
        )
        assert sleep.waits == [first]


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (408, ServerError),
        (409, ServerError),
        (429, RateLimited),
        (500, ServerError),
        (502, ServerError),
        (503, ServerError),
        (504, ServerError),
    ],
)
def test_retryable_statuses_are_retried_max_retries_times(status: int, kind: type[LLMError]) -> None:
    sleep = FakeSleep()
    recorder = Recorder(*[error(status, "overloaded") for _ in range(4)])
    with pytest.raises(kind) as caught:
        run_stream(make_client(recorder, sleep=sleep, max_retries=3))
    assert len(recorder.requests) == 4
    assert len(sleep.waits) == 3
    assert caught.value.status == status
    assert "after 3 retries" in str(caught.value)
    assert "overloaded" in str(caught.value)


def test_max_retries_zero_means_one_attempt() -> None:
    recorder = Recorder(error(503))
    with pytest.raises(ServerError):
        run_stream(make_client(recorder, max_retries=0))
    assert len(recorder.requests) == 1


@pytest.mark.parametrize(
    ("status", "kind", "fragment", "hint"),
    [
        (400, BadResponse, "HTTP 400", ""),
        (401, BadResponse, "rejected the API key (401)", "check NANOHERMES_API_KEY/OPENAI_API_KEY"),
        (402, BadResponse, "out of credit (402)", "credit"),
        (403, BadResponse, "access to test-model was refused (403)", "NANOHERMES_API_KEY"),
        (404, BadResponse, "model not found: test-model at http://llm.test/v1", "--base-url"),
        (413, BadResponse, "HTTP 413", ""),
        (422, BadResponse, "HTTP 422", ""),
    ],
)
def test_client_errors_are_not_retried_and_read_as_one_line(
    status: int, kind: type[LLMError], fragment: str, hint: str
) -> None:
    sleep = FakeSleep()
    recorder = Recorder(error(status, "server says\nsomething"))
    with pytest.raises(kind) as caught:
        run_stream(make_client(recorder, sleep=sleep, api_key="sk-test"))
    assert len(recorder.requests) == 1
    assert sleep.waits == []
    line = caught.value.one_line()
    assert fragment in line
    assert "server says something" in line
    assert "\n" not in line
    assert hint in caught.value.hint
    assert "sk-test" not in line


def test_401_without_a_key_says_a_key_is_needed() -> None:
    with pytest.raises(BadResponse) as caught:
        run_stream(make_client(Recorder(error(401))))
    assert "needs an API key" in str(caught.value)
    assert caught.value.hint == "check NANOHERMES_API_KEY/OPENAI_API_KEY"


def test_api_key_is_sent_as_bearer_token() -> None:
    recorder = Recorder(sse_response(OK_STREAM))
    run_stream(make_client(recorder, api_key="sk-abc"))
    assert recorder.requests[0].headers["authorization"] == "Bearer sk-abc"
    assert str(recorder.requests[0].url) == URL


def test_429_quota_exhausted_is_payment_not_rate_limit() -> None:
    body = {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota"}}
    recorder = Recorder(httpx.Response(429, json=body))
    with pytest.raises(BadResponse, match="out of credit"):
        run_stream(make_client(recorder))
    assert len(recorder.requests) == 1


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "This model's maximum context length is 128000 tokens"),
        (400, "context_length_exceeded"),
        (400, "the request exceeds the available context size, try increasing it"),
        (413, "Prompt is too long"),
        (400, "Prompt exceeds max length"),
        (400, "exceed_context_size_error"),
    ],
)
def test_context_overflow_is_detected_from_status_and_message(status: int, message: str) -> None:
    recorder = Recorder(error(status, message))
    with pytest.raises(ContextOverflow) as caught:
        run_stream(make_client(recorder))
    assert len(recorder.requests) == 1
    assert "too long for test-model's context window" in str(caught.value)
    assert "/compact" in caught.value.hint


def test_overflow_words_on_a_500_are_a_server_error() -> None:
    with pytest.raises(ServerError):
        run_stream(make_client(Recorder(*[error(500, "too long") for _ in range(4)])))


def test_connect_errors_are_retried_then_name_the_url() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    sleep = FakeSleep()
    recorder = Recorder(refuse, refuse, refuse, refuse)
    with pytest.raises(EndpointUnreachable) as caught:
        run_stream(make_client(recorder, sleep=sleep))
    assert len(recorder.requests) == 4
    assert sleep.waits == [0.75, 1.5, 3.0]
    assert "cannot reach http://llm.test/v1/chat/completions after 3 retries" in str(caught.value)
    assert "Connection refused" in str(caught.value)
    assert "--base-url" in caught.value.hint


def test_connect_error_then_success() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    items, result = run_stream(make_client(Recorder(refuse, sse_response(OK_STREAM))))
    assert isinstance(items[0], Retrying)
    assert "cannot reach" in items[0].reason
    assert result.content == "ok"


def test_read_timeout_before_the_answer_is_not_retried() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    recorder = Recorder(slow)
    with pytest.raises(ServerError) as caught:
        run_stream(make_client(recorder, request_timeout=30))
    assert "no answer within 30 s" in str(caught.value)
    assert "request_timeout" in caught.value.hint
    assert len(recorder.requests) == 1


def test_connect_timeout_is_10s_and_the_read_timeout_is_request_timeout() -> None:
    recorder = Recorder(sse_response(OK_STREAM))
    client = make_client(recorder, request_timeout=45)
    run_stream(client)
    assert recorder.requests[0].extensions["timeout"] == {
        "connect": 10.0,
        "read": 45,
        "write": 45,
        "pool": 10.0,
    }
    assert client.total_timeout == 600.0, "a total deadline bounds even a stream kept alive by comments"


def test_redirect_names_the_fix() -> None:
    recorder = Recorder(httpx.Response(301, headers={"location": "https://llm.test/v1/chat/completions"}))
    with pytest.raises(BadResponse) as caught:
        run_stream(make_client(recorder))
    assert "--base-url" in caught.value.hint


def test_stream_options_rejected_is_resent_without_it() -> None:
    recorder = Recorder(
        error(400, "Unrecognized request argument supplied: stream_options"), sse_response(OK_STREAM)
    )
    _, result = run_stream(make_client(recorder))
    assert result.content == "ok"
    assert "stream_options" in recorder.bodies[0]
    assert "stream_options" not in recorder.bodies[1]


def test_server_that_ignores_stream_true_is_read_as_json() -> None:
    body = completion("plain", usage={"prompt_tokens": 1, "completion_tokens": 2})
    items, result = run_stream(make_client(Recorder(httpx.Response(200, json=body))))
    assert result.content == "plain"
    assert result.usage.total_tokens == 3
    assert [type(i).__name__ for i in items] == ["TextDelta"]


def test_complete_sends_no_stream_and_parses_calls() -> None:
    calls = [
        {"id": "", "type": "function", "function": {"name": "read_file", "arguments": {"path": "a"}}},
        {"id": "c2", "type": "function", "function": {"name": "list_dir", "arguments": ""}},
        {"id": "c3", "type": "function", "function": {"name": "", "arguments": " "}},  # holds nothing
    ]
    recorder = Recorder(httpx.Response(200, json=completion("", calls)))
    result = make_client(recorder).complete([{"role": "user", "content": "hi"}], model="other")
    body = recorder.bodies[0]
    assert body["stream"] is False
    assert "stream_options" not in body
    assert body["model"] == "other"
    assert result.tool_calls[0].name == "read_file"
    assert result.tool_calls[0].id.startswith("call_")
    assert json.loads(result.tool_calls[0].arguments) == {"path": "a"}
    assert result.tool_calls[1].arguments == "{}"
    assert len(result.tool_calls) == 2


def test_complete_retries_like_stream() -> None:
    sleep = FakeSleep()
    recorder = Recorder(error(429, headers={"Retry-After": "2"}), httpx.Response(200, json=completion("x")))
    assert make_client(recorder, sleep=sleep).complete([{"role": "user", "content": "q"}]).content == "x"
    assert sleep.waits == [2.0]


def test_complete_accepts_a_streamed_answer() -> None:
    result = make_client(Recorder(sse_response(OK_STREAM))).complete([{"role": "user", "content": "q"}])
    assert result.content == "ok"


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("<html>502 Bad\nGateway</html>", "not JSON: '<html>502 Bad Gateway</html>'"),
        ("[1, 2]", "not a chat completion"),
        ('{"object": "list", "data": []}', "has no choices"),
    ],
)
def test_complete_rejects_bodies_that_are_not_chat_completions(body: str, fragment: str) -> None:
    recorder = Recorder(httpx.Response(200, text=body, headers={"content-type": "application/json"}))
    with pytest.raises(BadResponse) as caught:
        make_client(recorder).complete([{"role": "user", "content": "q"}])
    assert fragment in caught.value.one_line()
    assert "\n" not in caught.value.one_line()


def test_error_object_in_a_200_json_answer_is_raised() -> None:
    body: dict[str, Any] = {"error": {"message": "upstream failed", "code": 502}}
    with pytest.raises(BadResponse) as caught:
        make_client(Recorder(httpx.Response(200, json=body))).complete([{"role": "user", "content": "q"}])
    assert "upstream failed" in str(caught.value)


def test_html_page_instead_of_a_stream_points_at_base_url() -> None:
    page = httpx.Response(200, text="<html>Welcome</html>", headers={"content-type": "text/html"})
    recorder = Recorder(page)
    with pytest.raises(BadResponse) as caught:
        run_stream(make_client(recorder))
    assert "web page" in str(caught.value)
    assert "--base-url" in caught.value.hint
    assert len(recorder.requests) == 1


TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]


def test_tools_are_sent_with_tool_choice_auto() -> None:
    recorder = Recorder(sse_response(OK_STREAM))
    run_stream(make_client(recorder), tools=TOOLS)
    assert recorder.bodies[0]["tool_choice"] == "auto"
    assert recorder.bodies[0]["tools"] == TOOLS


def test_tool_choice_rejected_is_resent_without_it() -> None:
    recorder = Recorder(
        error(400, '"auto" tool choice requires --enable-auto-tool-choice (tool_choice)'),
        sse_response(OK_STREAM),
    )
    _, result = run_stream(make_client(recorder), tools=TOOLS)
    assert result.content == "ok"
    assert "tool_choice" not in recorder.bodies[1]
    assert recorder.bodies[1]["tools"] == TOOLS


def test_connection_reset_before_any_byte_is_retried() -> None:
    def reset(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError("[Errno 104] Connection reset by peer", request=request)

    sleep = FakeSleep()
    recorder = Recorder(reset, sse_response(OK_STREAM))
    items, result = run_stream(make_client(recorder, sleep=sleep))
    assert result.content == "ok"
    assert len(recorder.requests) == 2
    assert isinstance(items[0], Retrying)


def test_max_tokens_is_sent_only_when_set() -> None:
    recorder = Recorder(sse_response(OK_STREAM), sse_response(OK_STREAM))
    run_stream(make_client(recorder))
    run_stream(make_client(recorder, max_tokens=1024))
    assert "max_tokens" not in recorder.bodies[0]
    assert recorder.bodies[1]["max_tokens"] == 1024


def test_max_tokens_rejected_is_resent_without_it() -> None:
    recorder = Recorder(
        error(400, "Unsupported parameter: 'max_tokens' is not supported with this model."),
        sse_response(OK_STREAM),
    )
    _, result = run_stream(make_client(recorder, max_tokens=50))
    assert result.content == "ok"
    assert "max_tokens" not in recorder.bodies[1]
