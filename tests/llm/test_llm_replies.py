"""Odd but real replies (tests/llm/fixtures/replies/*.sse, each naming its origin) over a real socket.

An empty answer is never a silent success: retried once without streaming, then an LLMError. A stream
of only [DONE] or only choiceless chunks is incomplete; llama.cpp's `error:` line and `event: error`
are errors. Content parts, reasoning_details, refusals and several choices are read right.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_server import FakeServer
from fake_server import fake_server as fake_server
from llm_helpers import FakeSleep, stream_error

from nanohermes.core.errors import BadResponse, LLMError
from nanohermes.core.events import ReasoningDelta, Retrying, TextDelta
from nanohermes.core.types import ChatResult
from nanohermes.llm import ChatClient

REPLIES = Path(__file__).parent / "fixtures" / "replies"


def push_fixture(server: FakeServer, name: str) -> None:
    """Send a fixture file as it is, event by event (its `: origin` comment lines included)."""
    events = [event for event in (REPLIES / name).read_text(encoding="utf-8").split("\n\n") if event.strip()]
    server.push_sse(list(events))


def completion(message: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
    }


def stream(server: FakeServer) -> tuple[list[Any], ChatResult]:
    client = ChatClient(base_url=server.url, model="m", sleep=FakeSleep())
    try:
        items = list(client.stream([{"role": "user", "content": "hi"}]))
    finally:
        client.close()
    result = items[-1]
    assert isinstance(result, ChatResult)
    return items[:-1], result


def failing(server: FakeServer, kind: type[LLMError]) -> LLMError:
    err = stream_error(ChatClient(base_url=server.url, model="m", sleep=FakeSleep()))
    assert type(err) is kind, type(err).__name__  # raised as such, not wrapped in another error
    return err


@pytest.mark.parametrize("name", ["llamacpp_empty_stop.sse", "done_only.sse", "choiceless_usage_only.sse"])
def test_nothing_streamed_is_retried_once_without_streaming(fake_server: FakeServer, name: str) -> None:
    push_fixture(fake_server, name)
    fake_server.push_status(200, completion({"content": "Hello"}))
    items, result = stream(fake_server)
    assert result.content == "Hello"
    assert any(isinstance(item, Retrying) and "without streaming" in item.reason for item in items)
    assert [body["stream"] for body in fake_server.bodies] == [True, False]


@pytest.mark.parametrize("name", ["llamacpp_empty_stop.sse", "done_only.sse", "choiceless_usage_only.sse"])
def test_still_empty_after_the_retry_is_an_error_naming_the_finish_reason(
    fake_server: FakeServer, name: str
) -> None:
    push_fixture(fake_server, name)
    fake_server.push_status(200, completion({"content": ""}))
    err = failing(fake_server, LLMError)
    assert "the model returned an empty answer (finish_reason: stop)" in str(err)
    assert len(fake_server.requests) == 2


def test_empty_answer_cut_by_the_output_cap_is_not_retried(fake_server: FakeServer) -> None:
    fake_server.push_status(200, completion({"content": None, "reasoning_content": "Let me think"}, "length"))
    err = failing(fake_server, LLMError)
    assert "(finish_reason: length)" in str(err)
    assert "max_output_tokens" in str(getattr(err, "hint", ""))
    assert len(fake_server.requests) == 1


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("llamacpp_error_event.sse", "Failed to parse tool call arguments"),
        ("event_error.sse", "Upstream model server returned 503"),
    ],
)
def test_error_events_are_errors(fake_server: FakeServer, name: str, words: str) -> None:
    push_fixture(fake_server, name)
    err = failing(fake_server, BadResponse)
    assert words in str(err)
    assert len(fake_server.requests) == 1


def test_mistral_content_parts_split_into_answer_and_reasoning(fake_server: FakeServer) -> None:
    push_fixture(fake_server, "mistral_thinking_parts.sse")
    items, result = stream(fake_server)
    assert result.content == "2 + 2 = 4"
    assert result.reasoning == "The user asks for 2+2. That is 4."
    assert "".join(i.text for i in items if isinstance(i, TextDelta)) == "2 + 2 = 4"
    assert "".join(i.text for i in items if isinstance(i, ReasoningDelta)) == result.reasoning


def test_mistral_content_parts_not_streamed(fake_server: FakeServer) -> None:
    parts = [
        {
            "type": "thinking",
            "thinking": [{"type": "text", "text": "The user wants exactly READY."}],
            "closed": True,
        },
        {"type": "text", "text": "READY"},
    ]
    fake_server.push_status(200, completion({"content": parts, "tool_calls": None}))
    _, result = stream(fake_server)
    assert (result.content, result.reasoning) == ("READY", "The user wants exactly READY.")


def test_reasoning_details_are_reasoning(fake_server: FakeServer) -> None:
    push_fixture(fake_server, "openrouter_reasoning_details.sse")
    _, result = stream(fake_server)
    assert result.reasoning == "Compare the two numbers."
    assert result.content == "9.11 is smaller."


def test_only_choice_index_0_is_read(fake_server: FakeServer) -> None:
    push_fixture(fake_server, "two_choices.sse")
    _, result = stream(fake_server)
    assert result.content == "Red"
    assert result.finish_reason == "stop"


def test_a_refusal_is_shown_as_the_answer(fake_server: FakeServer) -> None:
    push_fixture(fake_server, "openai_refusal.sse")
    items, result = stream(fake_server)
    refusal = "I'm very sorry, but I can't assist with that request."
    assert result.refusal == refusal
    assert result.content == ""
    assert "".join(i.text for i in items if isinstance(i, TextDelta)) == refusal
    assert result.to_message()["content"] == refusal
    assert len(fake_server.requests) == 1, "a refusal is an answer, not an empty one"


def test_a_refusal_not_streamed(fake_server: FakeServer) -> None:
    fake_server.push_status(200, completion({"content": None, "refusal": "I can't help with that."}))
    _, result = stream(fake_server)
    assert result.refusal == "I can't help with that."


@pytest.mark.parametrize(
    ("fixture", "content", "reason"),
    [
        ("length_partial.sse", "The three steps are: first, read the", "length"),
        ("azure_content_filter.sse", "The story begins", "content_filter"),
    ],
)
def test_an_answer_stopped_part_way_keeps_its_text(
    fake_server: FakeServer, fixture: str, content: str, reason: str
) -> None:
    push_fixture(fake_server, fixture)
    _, result = stream(fake_server)
    assert result.content == content
    assert result.finish_reason == reason
    assert len(fake_server.requests) == 1


def test_an_empty_answer_stopped_by_the_content_filter_is_not_retried(fake_server: FakeServer) -> None:
    push_fixture(fake_server, "azure_content_filter_empty.sse")
    err = failing(fake_server, LLMError)
    assert "(finish_reason: content_filter)" in str(err)
    assert "content filter" in str(getattr(err, "hint", ""))
    assert len(fake_server.requests) == 1
