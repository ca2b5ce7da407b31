"""End to end (`nanohermes -p` in a subprocess, fake endpoint on a real socket): an empty answer, a
refusal and an answer cut by the output cap are never a silent success."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_process import run_nanohermes
from fake_server import FakeServer
from fake_server import fake_server as fake_server

REPLIES = Path(__file__).parents[1] / "llm" / "fixtures" / "replies"


def nh(server: FakeServer, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_nanohermes(server, cwd, "--yes", *args)


def push_fixture(server: FakeServer, name: str) -> None:
    events = [e for e in (REPLIES / name).read_text(encoding="utf-8").split("\n\n") if e.strip()]
    server.push_sse(list(events))


def empty_completion() -> dict[str, Any]:
    choice = {"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}
    return {"id": "chatcmpl-e", "object": "chat.completion", "choices": [choice]}


def test_empty_answer_fails_the_turn(fake_server: FakeServer, tmp_path: Path) -> None:
    push_fixture(fake_server, "llamacpp_empty_stop.sse")
    fake_server.push_status(200, empty_completion())
    done = nh(fake_server, tmp_path, "-p", "hello")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "the model returned an empty answer (finish_reason: stop)" in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


def test_empty_answer_in_json_is_not_completed(fake_server: FakeServer, tmp_path: Path) -> None:
    push_fixture(fake_server, "done_only.sse")
    fake_server.push_status(200, empty_completion())
    done = nh(fake_server, tmp_path, "-p", "hello", "--json")
    assert done.returncode == 1
    payload = json.loads(done.stdout)
    assert payload["completed"] is False
    assert "empty answer" in payload["error"]


def test_refusal_is_the_answer_and_the_turn_is_not_completed(fake_server: FakeServer, tmp_path: Path) -> None:
    push_fixture(fake_server, "openai_refusal.sse")
    done = nh(fake_server, tmp_path, "-p", "do something bad")
    assert done.stdout == "I'm very sorry, but I can't assist with that request.\n"
    assert done.returncode == 1
    assert "refused" in done.stderr


def test_cut_answer_is_kept_and_said_to_be_cut(fake_server: FakeServer, tmp_path: Path) -> None:
    push_fixture(fake_server, "length_partial.sse")
    done = nh(fake_server, tmp_path, "-p", "list the steps", "--json")
    payload = json.loads(done.stdout)
    assert payload["answer"] == "The three steps are: first, read the"
    assert payload["completed"] is False
    assert "finish_reason: length" in payload["error"]
    assert done.returncode == 1


@pytest.mark.timeout(60)
def test_a_tool_call_cut_by_the_cap_is_never_run(fake_server: FakeServer, tmp_path: Path) -> None:
    push_fixture(fake_server, "length_cut_call.sse")
    done = nh(fake_server, tmp_path, "-p", "write notes")
    assert not (tmp_path / "notes.txt").exists()
    assert "cut by the output-token cap were not run" in done.stderr
    assert done.returncode == 1
    assert len([b for b in fake_server.bodies if b.get("stream")]) == 1, "nothing was sent back to run"


@pytest.mark.parametrize(
    ("fixture", "answer", "error"),
    [
        ("azure_content_filter.sse", "The story begins", "content filter"),
        ("deepseek_insufficient_resource.sse", "Step one: open the", "insufficient_system_resource"),
    ],
    ids=["stopped-by-the-content-filter", "cut-for-lack-of-capacity"],
)
def test_a_partial_answer_the_provider_stopped_is_shown_and_not_a_success(
    fake_server: FakeServer, tmp_path: Path, fixture: str, answer: str, error: str
) -> None:
    push_fixture(fake_server, fixture)
    done = nh(fake_server, tmp_path, "-p", "go on", "--json")
    payload = json.loads(done.stdout)
    assert payload["answer"] == answer
    assert payload["completed"] is False
    assert error in payload["error"]
    assert done.returncode == 1
    plain = nh(fake_server, tmp_path, "-p", "again")  # the default reply: a normal answer completes
    assert plain.returncode == 0, plain.stderr


@pytest.mark.timeout(60)
def test_tool_calls_in_a_reply_stopped_by_the_content_filter_are_never_run(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    # the Azure chunk shape of azure_content_filter.sse, with a complete call before the filter stops it
    call = {"index": 0, "id": "call_1", "type": "function"}
    call["function"] = {"name": "write_file", "arguments": '{"path": "notes.txt", "content": "x"}'}
    chunk = {"id": "chatcmpl-f", "object": "chat.completion.chunk", "model": "gpt-4o-2024-05-13"}
    fake_server.push_sse(
        [
            {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}}]},
            {
                **chunk,
                "choices": [
                    {
                        "index": 0,
                        "delta": {},
                        "finish_reason": "content_filter",
                        "content_filter_results": {"violence": {"filtered": True, "severity": "medium"}},
                    }
                ],
            },
            "data: [DONE]",
        ]
    )
    done = nh(fake_server, tmp_path, "-p", "write notes")
    assert not (tmp_path / "notes.txt").exists()
    assert "content filter were not run" in done.stderr
    assert done.returncode == 1
