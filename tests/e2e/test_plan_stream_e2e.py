"""End to end: the `update_plan` tool and `-p --output-format stream-json`, through the real
`nanohermes -p` against the fake loopback endpoint."""

from __future__ import annotations

import functools
import json
import signal
from pathlib import Path
from typing import Any

from cli_process import chat_bodies, one_error_line, read_line, run_nanohermes, started_nanohermes
from fake_server import FakeServer
from fake_server import fake_server as fake_server

KEY = "sk-e2e-plan-0123456789abcdef"
nh = functools.partial(run_nanohermes, key=KEY)
PLAN = [
    {"step": "read the code", "status": "completed"},
    {"step": "fix the bug", "status": "in_progress"},
    {"step": "run the tests", "status": "pending"},
]
BAD_PLANS: dict[str, Any] = {
    "a bad status": ([{"step": "x", "status": "done"}], "status must be one of pending, in_progress"),
    "two in progress": ([PLAN[1], {"step": "b", "status": "in_progress"}], "at most one plan step"),
    "an empty step": ([{"step": "  ", "status": "pending"}], 'step 1 needs a non-empty "step"'),
    "not a list": ("first this, then that", "argument plan must be an array"),
    "a step not an object": (["read it"], 'step 1 needs a non-empty "step"'),
    "no steps": ([], "non-empty list"),
    "too many steps": ([{"step": f"s{i}", "status": "pending"} for i in range(31)], "at most 30 steps"),
    "a step too long": ([{"step": "x" * 301, "status": "pending"}], "longer than 300 characters"),
}


def stream_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def kinds(lines: list[dict[str, Any]]) -> list[str]:
    """The line types in order, a run of text lines as one."""
    shown: list[str] = []
    for line in lines:
        if not (line["type"] == "text" and shown[-1:] == ["text"]):
            shown.append(line["type"])
    return shown


def test_json_has_the_last_plan_and_bad_plans_are_tool_errors(
    fake_server: FakeServer, workspace: Path
) -> None:
    calls = [("update_plan", {"plan": PLAN})]
    calls += [("update_plan", {"plan": plan}) for plan, _ in BAD_PLANS.values()]
    calls.append(("update_plan", '{"plan": [{"step": "unclosed"'))
    fake_server.push_tool_calls(calls)
    fake_server.push_text("Planned.")
    done = nh(fake_server, workspace, "-p", "fix the bug", "--json")  # no --yes: the plan asks nothing
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["plan"] == PLAN  # the bad updates after it changed nothing
    assert payload["answer"] == "Planned."
    offered = {t["function"]["name"] for t in chat_bodies(fake_server)[0]["tools"]}
    assert "update_plan" in offered
    results = [m["content"] for m in chat_bodies(fake_server)[1]["messages"] if m["role"] == "tool"]
    assert results[0] == "plan updated: 1 of 3 steps completed"
    for (case, (_, why)), result in zip(BAD_PLANS.items(), results[1:], strict=False):
        assert result.startswith("ERROR: "), case
        assert why in result, (case, result)
    assert "not valid JSON" in results[-1]
    assert [c["ok"] for c in payload["tool_calls"]] == [True] + [False] * (len(BAD_PLANS) + 1)


def test_stream_json_prints_the_turn_line_by_line_in_order(fake_server: FakeServer, workspace: Path) -> None:
    remembered = nh(None, workspace, "memory", "add", "preference", "Always run the tests with pytest -q")
    assert remembered.returncode == 0, remembered.stderr
    (workspace / "big.txt").write_text("line of text\n" * 1000, encoding="utf-8")
    fake_server.push_tool_calls(
        [("update_plan", {"plan": PLAN}), ("read_file", {"path": "big.txt"})], text="Planning first."
    )
    fake_server.push_text("All tests pass.")
    done = nh(fake_server, workspace, "-p", "run the tests with pytest", "--output-format", "stream-json")
    assert done.returncode == 0, done.stderr
    lines = stream_lines(done.stdout)
    assert kinds(lines) == [
        "memory",
        "text",
        "tool_start",
        "tool_start",
        "tool_end",
        "plan",
        "tool_end",
        "text",
        "result",
    ]
    assert "pytest -q" in lines[0]["memories"][0]["text"]
    texts = "".join(line["text"] for line in lines if line["type"] == "text")
    assert texts == "Planning first.All tests pass."
    plan_start, read_start, plan_end, plan, read_end = [line for line in lines if line["type"] != "text"][1:6]
    assert plan_start == {
        "type": "tool_start",
        "id": "call_1",
        "name": "update_plan",
        "arguments": {"plan": PLAN},
        "summary": "",
    }
    assert read_start["arguments"] == {"path": "big.txt"}
    assert read_start["summary"] == "big.txt"
    assert plan_end["ok"] is True
    assert plan_end["output"] == "plan updated: 1 of 3 steps completed"
    assert plan == {"type": "plan", "plan": PLAN}
    assert read_end["id"] == "call_2"
    assert read_end["ok"] is True
    assert "line of text" in read_end["output"]
    assert len(read_end["output"]) == 2001
    assert read_end["output"].endswith("…")
    result = lines[-1]
    assert result["answer"] == "All tests pass."
    assert result["exit"] == 0
    assert result["completed"] is True
    assert result["error"] is None
    assert result["plan"] == PLAN
    assert result["usage"]["total_tokens"] == 30
    assert Path(result["session"]).is_file()


def test_stream_json_ends_in_a_result_line_on_a_model_error(fake_server: FakeServer, workspace: Path) -> None:
    fake_server.push_status(401, {"error": {"message": "Incorrect API key provided"}})
    failed = nh(fake_server, workspace, "-p", "hi", "--output-format", "stream-json")
    assert failed.returncode == 1
    [result] = stream_lines(failed.stdout)
    assert result["type"] == "result"
    assert result["exit"] == 1
    assert result["completed"] is False
    assert "Incorrect API key" in result["error"]
    assert result["error"] in one_error_line(failed)


def test_stream_json_lines_arrive_as_they_happen_and_ctrl_c_still_ends_in_a_result(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_text("word " * 400, delay=0.05)
    args = ("-p", "tell me", "--output-format", "stream-json")
    with started_nanohermes(fake_server, workspace, *args, key=KEY) as process:
        first = read_line(process, timeout=30)  # while the reply is still streaming
        assert json.loads(first)["type"] == "text"
        assert json.loads(first)["text"].startswith("word")
        assert process.poll() is None
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    result = stream_lines(out)[-1]
    assert result["type"] == "result"
    assert result["exit"] == 130
    assert result["error"] == "interrupted by user"
    assert result["answer"] == ""
