"""Compaction (SPEC §4.3): what is kept, what is archived, pairs never split, fallback."""

from __future__ import annotations

import pytest

from nanohermes.agent.compaction import (
    DROPPED_PREFIX,
    SUMMARY_PREFIX,
    TRANSCRIPT_CHARS,
    compact,
    split_point,
    summary_request,
    total_chars,
    transcript,
)
from nanohermes.core.errors import BadResponse, Cancelled
from nanohermes.core.types import Message


def _call(call_id: str, name: str = "read_file") -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _session(turns: int, tool_output: int = 10) -> list[Message]:
    messages: list[Message] = [{"role": "system", "content": "SYSTEM"}]
    for n in range(turns):
        messages.append({"role": "user", "content": f"question {n}"})
        messages.append({"role": "assistant", "content": "", "tool_calls": [_call(f"c{n}")]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "x" * tool_output})
        messages.append({"role": "assistant", "content": f"answer {n}"})
    return messages


def test_split_point_never_separates_tool_results_from_their_call() -> None:
    messages = _session(5)
    for keep in range(1, len(messages)):
        cut = split_point(messages, keep)
        assert cut >= 1
        assert messages[cut]["role"] != "tool"


def test_summary_replaces_the_middle_and_everything_removed_is_returned() -> None:
    messages = _session(40, tool_output=4000)
    assert total_chars(messages) > 120_000
    seen: list[list[Message]] = []

    def summarize(middle: list[Message]) -> str:
        seen.append(middle)
        return "Goal: answer questions."

    result = compact(messages, keep=10, summarize=summarize)
    assert result is not None
    assert result.summarized
    assert result.messages[0] == {"role": "system", "content": "SYSTEM"}
    assert result.messages[1]["content"].startswith(SUMMARY_PREFIX)
    assert "Goal: answer questions." in result.messages[1]["content"]
    tail = result.messages[2:]
    assert tail == messages[len(messages) - len(tail) :]
    assert 10 <= len(tail) <= 12
    assert result.removed == messages[1 : len(messages) - len(tail)]
    assert result.after_chars < result.before_chars
    # old tool outputs were shortened before being handed to the summariser
    assert max(len(m["content"]) for m in seen[0] if m["role"] == "tool") < 500


def test_shortening_tool_outputs_alone_can_be_enough() -> None:
    messages = _session(20, tool_output=8000)

    def summarize(middle: list[Message]) -> str:
        raise AssertionError("should not be asked to summarise")

    result = compact(messages, keep=10, summarize=summarize, threshold=120_000)
    assert result is not None
    assert not result.summarized
    assert len(result.messages) == len(messages)
    assert result.after_chars <= 120_000
    assert all(m["role"] == "tool" and len(m["content"]) == 8000 for m in result.removed)
    # when shortening is not enough, the middle is summarised and archived in full (not shortened)
    summarised = compact(messages, keep=10, summarize=lambda middle: "Goal: x.", threshold=20_000)
    assert summarised is not None
    assert summarised.summarized
    assert summarised.after_chars < result.after_chars  # the kept tail alone is over 20,000
    assert summarised.removed == messages[1 : len(messages) - len(summarised.messages) + 2]


def test_failed_summary_drops_the_middle_with_a_note() -> None:
    messages = _session(10, tool_output=50)

    def summarize(middle: list[Message]) -> str:
        raise BadResponse("the endpoint said no")

    result = compact(messages, keep=4, summarize=summarize)
    assert result is not None
    assert not result.summarized
    assert result.messages[1]["content"].startswith(DROPPED_PREFIX)
    assert "the endpoint said no" in result.note
    assert len(result.removed) + len(result.messages) - 2 == len(messages) - 1


@pytest.mark.parametrize("reply", ["", "  \n "])
def test_an_empty_summary_is_a_failure_not_a_summary(reply: str) -> None:
    messages = _session(10, tool_output=50)
    result = compact(messages, keep=4, summarize=lambda middle: reply)
    assert result is not None
    assert not result.summarized
    assert result.messages[1]["content"].startswith(DROPPED_PREFIX)
    assert "empty summary" in result.note
    assert len(result.removed) + len(result.messages) - 2 == len(messages) - 1


def test_a_runaway_summary_is_cut_with_a_note() -> None:
    messages = _session(10, tool_output=50)
    result = compact(messages, keep=4, summarize=lambda middle: "y" * 5_000_000)
    assert result is not None
    assert result.summarized
    assert result.messages[1]["content"].startswith(SUMMARY_PREFIX)
    assert len(result.messages[1]["content"]) < 100_000  # not the 5,000,000 characters of the reply
    assert "summary was cut" in result.note


def test_cancel_during_summary_propagates_and_nothing_to_compact_is_none() -> None:
    def cancelled(middle: list[Message]) -> str:
        raise Cancelled()

    with pytest.raises(Cancelled):
        compact(_session(5), keep=2, summarize=cancelled)
    assert compact(_session(1), keep=10, summarize=cancelled) is None


def test_transcript_keeps_head_and_tail_and_request_shape() -> None:
    messages = [{"role": "user", "content": f"m{n} " + "y" * 500} for n in range(400)]
    text = transcript(messages)
    assert text.startswith("[user] m0 ")
    assert "m399" in text
    whole = "\n".join(f"[user] m{n} " + "y" * 500 for n in range(400))
    assert f"[… {len(whole) - TRANSCRIPT_CHARS} characters left out …]" in text
    request = summary_request(_session(1))
    assert [m["role"] for m in request] == ["system", "user"]
    assert "[tool result]" in request[1]["content"]
    assert "read_file" in request[1]["content"]


def test_a_runaway_summary_of_a_small_middle_does_not_grow_the_context() -> None:
    messages = _session(20, tool_output=500)  # a middle of about 10,000 characters, under the cap
    middle = compact(messages, keep=4, summarize=lambda middle: "y" * 1_000_000)
    assert middle is not None
    assert middle.after_chars < middle.before_chars  # not 20,000 characters in place of 10,000
    half = total_chars(messages[1:-4]) // 2
    assert middle.note == f"the summary was cut from 1,000,000 to {half:,} characters"
    tiny = compact(_session(3), keep=4, summarize=lambda middle: "y" * 1_000_000)
    assert tiny is not None  # a few short messages may get a summary longer than they are, not longer
    assert "to 2,000 characters" in tiny.note


def test_an_earlier_summary_alone_in_the_middle_is_not_summarised_again() -> None:
    # the kept tail alone over the threshold: each model call of the turn would summarise the summary
    def summarize(middle: list[Message]) -> str:
        raise AssertionError("nothing new to summarise")

    summary: Message = {"role": "user", "content": f"{SUMMARY_PREFIX}\nGoal: x."}
    tail = _session(3, tool_output=50_000)[1:]
    messages = [{"role": "system", "content": "S"}, summary, *tail]
    assert compact(messages, keep=len(tail), summarize=summarize, threshold=1_000) is None
    dropped: Message = {"role": "user", "content": f"{DROPPED_PREFIX}: 5 messages; …]"}
    assert compact([messages[0], dropped, *tail], keep=len(tail), summarize=summarize) is None
