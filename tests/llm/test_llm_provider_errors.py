"""Real provider error bodies (tests/llm/provider_errors.py) over a real socket: each classified right.

Context overflows from every major provider are ContextOverflow (so the agent compacts and retries),
sent once — never retried as a server error or a rate limit. «Request too large» 413/429 is handled
like an overflow. A field too long is a plain bad request; a per-minute limit is retried even when it
speaks of billing; an exhausted quota is out of credit.
"""

from __future__ import annotations

import json

import pytest
from fake_server import FakeServer
from fake_server import fake_server as fake_server
from llm_helpers import FakeSleep, stream_error
from provider_errors import FIELD_TOO_LONG, OVERFLOWS, QUOTA, RATE_LIMITS, TOO_LARGE, ProviderError

from nanohermes.core.errors import BadResponse, ContextOverflow, LLMError, RateLimited
from nanohermes.core.types import ChatResult
from nanohermes.llm import ChatClient
from nanohermes.llm.failures import Target, payload_error, status_error


def _client(server: FakeServer, sleep: FakeSleep | None = None) -> ChatClient:
    return ChatClient(
        base_url=server.url, model="real-model", max_retries=2, sleep=sleep or FakeSleep(), random=lambda: 0.5
    )


def _fail(server: FakeServer, case: ProviderError, sleep: FakeSleep | None = None) -> LLMError:
    server.push_status(case.status, case.body, headers=case.headers)
    return stream_error(_client(server, sleep))


@pytest.mark.parametrize("case", OVERFLOWS + TOO_LARGE, ids=lambda c: c.name)
def test_every_providers_overflow_is_recognised_and_sent_once(
    fake_server: FakeServer, case: ProviderError
) -> None:
    err = _fail(fake_server, case)
    assert isinstance(err, ContextOverflow), f"{case.name}: {type(err).__name__}: {err}"
    assert len(fake_server.requests) == 1, "an overflow is never resent as is"
    assert err.status == case.status
    assert "\n" not in err.one_line()


def test_llamacpp_500_overflow_is_not_retried_as_a_server_error(fake_server: FakeServer) -> None:
    case = next(c for c in OVERFLOWS if c.name == "llamacpp-500")
    sleep = FakeSleep()
    err = _fail(fake_server, case, sleep)
    assert isinstance(err, ContextOverflow)
    assert sleep.waits == []
    assert "Context size has been exceeded" in str(err)


def test_request_too_large_says_what_it_is(fake_server: FakeServer) -> None:
    err = _fail(fake_server, TOO_LARGE[0])
    assert "per-minute token limit" in str(err)
    assert "Limit 6000, Requested 10338" in str(err)


def test_ollama_nested_error_is_read_through(fake_server: FakeServer) -> None:
    err = _fail(fake_server, next(c for c in OVERFLOWS if c.name == "ollama"))
    assert "request (351 tokens) exceeds the available context size (256 tokens)" in str(err)
    assert '{"error"' not in str(err), "the nested JSON is unwrapped, not shown raw"


@pytest.mark.parametrize("case", FIELD_TOO_LONG, ids=lambda c: c.name)
def test_a_field_too_long_is_a_bad_request_not_an_overflow(
    fake_server: FakeServer, case: ProviderError
) -> None:
    err = _fail(fake_server, case)
    assert type(err) is BadResponse
    assert "string too long" in str(err)
    assert len(fake_server.requests) == 1


@pytest.mark.parametrize("case", RATE_LIMITS, ids=lambda c: c.name)
def test_per_minute_limits_are_retried_despite_billing_words(
    fake_server: FakeServer, case: ProviderError
) -> None:
    for _ in range(2):
        fake_server.push_status(case.status, case.body, headers=case.headers)
    fake_server.push_text("after the wait")
    client = _client(fake_server)
    try:
        items = list(client.stream([{"role": "user", "content": "hi"}]))
    finally:
        client.close()
    result = items[-1]
    assert isinstance(result, ChatResult)
    assert result.content == "after the wait"
    assert len(fake_server.requests) == 3


def test_per_minute_limit_after_every_retry_is_a_rate_limit(fake_server: FakeServer) -> None:
    case = RATE_LIMITS[1]
    for _ in range(2):
        fake_server.push_status(case.status, case.body)
    err = _fail(fake_server, case)
    assert isinstance(err, RateLimited), type(err).__name__


@pytest.mark.parametrize("case", QUOTA, ids=lambda c: c.name)
def test_an_exhausted_quota_is_out_of_credit_and_not_retried(
    fake_server: FakeServer, case: ProviderError
) -> None:
    err = _fail(fake_server, case)
    assert isinstance(err, BadResponse)
    assert "out of credit" in str(err)
    assert len(fake_server.requests) == 1


@pytest.mark.parametrize(
    "message",
    [
        "Token limit reached",  # OpenRouter's output cap, after finish_reason: length
        "input exceeds token limit for this response",
    ],
)
def test_token_limit_words_alone_are_not_an_overflow(message: str) -> None:
    err = payload_error({"message": message, "code": 400}, Target("m", "http://x/v1"), in_stream=True)
    assert not isinstance(err, ContextOverflow)


def test_overflow_inside_a_200_stream_uses_the_same_rules(fake_server: FakeServer) -> None:
    body = next(c for c in OVERFLOWS if c.name == "zai").body
    fake_server.push_sse([json.dumps(body).join(["data: ", ""])])
    client = _client(fake_server)
    try:
        with pytest.raises(ContextOverflow):
            list(client.stream([{"role": "user", "content": "hi"}]))
    finally:
        client.close()


def test_a_key_echoed_where_the_line_is_cut_leaves_no_prefix_of_it() -> None:
    key = "sk-proj-EchoedBackKey0123456789abcdef"
    target = Target("m", "http://x/v1", key)
    body = json.dumps({"error": {"message": "x" * 285 + f" Incorrect API key provided: {key}"}})
    for err in (
        status_error(401, body, target),
        status_error(400, body, target),
        payload_error({"message": "y" * 285 + key}, target, in_stream=True),
    ):
        assert "sk-proj-Ech" not in err.one_line()
    assert "[redacted]" in status_error(500, f"upstream says {key}", target).one_line()
    short = Target("m", "http://x/v1", "none")  # a local server's placeholder is no secret
    assert "key none is wrong" in status_error(401, "key none is wrong", short).one_line()
