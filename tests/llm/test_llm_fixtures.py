"""Every server deviation, as a hand-written SSE fixture, parsed by the real client into the right calls."""

from __future__ import annotations

import json
from typing import Any

import pytest
from llm_helpers import Recorder, fixture_bytes, make_client, run_stream, sse_response

from nanohermes.core.errors import BadResponse, ContextOverflow
from nanohermes.core.events import ReasoningDelta, TextDelta
from nanohermes.core.types import Usage

# fixture → (calls as (id or None for "synthesised", name, arguments), finish_reason, content)
CASES: dict[str, tuple[list[tuple[str | None, str, str]], str, str]] = {
    "openai_fragmented_args.sse": (
        [("call_abc", "write_file", '{"path": "a.txt", "content": "line1\\nh\u00e9llo }"}')],
        "tool_calls",
        "",
    ),
    "index_missing.sse": (
        [("call_1", "read_file", '{"path": "README.md"}'), ("call_2", "list_dir", '{"path": "."}')],
        "tool_calls",
        "",
    ),
    "ollama_index0_many.sse": (
        [
            ("call_x1", "read_file", '{"path":"a.py"}'),
            ("call_x2", "read_file", '{"path":"b.py"}'),
            ("call_x3", "grep", '{"pattern":"TODO"}'),
        ],
        "tool_calls",
        "",
    ),
    "groq_whole_call.sse": ([("call_g1", "run_shell", '{"command":"ls -la"}')], "tool_calls", ""),
    "llamacpp_python_repeat.sse": (
        [("call__0_edit_file_cmpl-l", "edit_file", '{"path": "x.py", "old": "a", "new": "b"}')],
        "tool_calls",
        "",
    ),
    "lmstudio_new_id_each_chunk.sse": (
        [("123456789", "search_files", '{"query":"def main"}')],
        "tool_calls",
        "",
    ),
    "name_fragments.sse": (
        [("call_n", "save_memory", '{"kind": "preference", "text": "use tabs"}')],
        "tool_calls",
        "",
    ),
    "empty_arguments.sse": ([("call_e", "list_memories", "{}")], "tool_calls", ""),
    "finish_stop_with_calls.sse": (
        [("call_s", "read_file", '{"path": "setup.py"}')],
        "stop",
        "Let me look.",
    ),
    "empty_tool_calls_finish_tool_calls.sse": ([], "tool_calls", "Done, nothing to change."),
    "multiline_crlf_events.sse": ([], "stop", "multi-line"),
    "no_blank_lines.sse": ([], "stop", "no separators"),
    "eof_after_finish_choice_usage.sse": ([], "stop", "short"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_parses_into_the_right_calls(name: str) -> None:
    expected_calls, finish, content = CASES[name]
    recorder = Recorder(sse_response(fixture_bytes(name)))
    items, result = run_stream(make_client(recorder))
    assert len(recorder.requests) == 1, "a complete stream is never retried"
    got = [(call.id, call.name, call.arguments) for call in result.tool_calls]
    assert got == expected_calls
    for call in result.tool_calls:
        json.loads(call.arguments)  # every call's arguments is valid JSON text, kept verbatim
    assert result.finish_reason == finish
    assert result.content == content
    assert "".join(i.text for i in items if isinstance(i, TextDelta)) == content


def test_usage_from_top_level_choice_and_x_groq() -> None:
    expected = {
        "openai_fragmented_args.sse": Usage(50, 20, 70),
        "groq_whole_call.sse": Usage(300, 25, 325),
        "eof_after_finish_choice_usage.sse": Usage(4, 1, 5),
        "deepseek_reasoning.sse": Usage(10, 12, 22),
    }
    for name, usage in expected.items():
        _, result = run_stream(make_client(Recorder(sse_response(fixture_bytes(name)))))
        assert result.usage == usage, name


def test_usage_counts_that_are_not_token_counts_count_as_zero() -> None:
    sent = {"prompt_tokens": -15, "completion_tokens": "7", "total_tokens": True}
    assert Usage.from_dict(sent) == Usage(0, 0, 0)
    assert Usage.from_dict({"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": -1}) == Usage(3, 2, 5)


@pytest.mark.parametrize(
    ("name", "reasoning", "content"),
    [
        ("deepseek_reasoning.sse", "The user wants a greeting.", "Hello!"),
        ("openrouter_reasoning.sse", "Thinking.", "42"),
    ],
)
def test_reasoning_is_its_own_event(name: str, reasoning: str, content: str) -> None:
    items, result = run_stream(make_client(Recorder(sse_response(fixture_bytes(name)))))
    assert "".join(i.text for i in items if isinstance(i, ReasoningDelta)) == reasoning
    assert "".join(i.text for i in items if isinstance(i, TextDelta)) == content
    assert result.reasoning == reasoning
    assert result.to_message()["reasoning_content"] == reasoning
    first_text = next(n for n, i in enumerate(items) if isinstance(i, TextDelta))
    assert all(isinstance(i, ReasoningDelta) for i in items[:first_text])


def test_error_chunk_inside_http_200_is_raised() -> None:
    client = make_client(Recorder(sse_response(fixture_bytes("openrouter_midstream_error.sse"))))
    seen: list[Any] = []
    with pytest.raises(BadResponse) as caught:
        seen.extend(client.stream([{"role": "user", "content": "hi"}]))
    assert seen == [TextDelta("Partial")], "what came before the error was shown; no result followed"
    assert "Provider disconnected unexpectedly" in str(caught.value)
    assert "\n" not in caught.value.one_line()


def test_context_overflow_error_chunk_is_its_own_type() -> None:
    client = make_client(Recorder(sse_response(fixture_bytes("error_chunk_context.sse"))))
    with pytest.raises(ContextOverflow) as caught:
        list(client.stream([{"role": "user", "content": "hi"}]))
    assert "maximum context length is 8192" in str(caught.value)
    assert caught.value.hint
