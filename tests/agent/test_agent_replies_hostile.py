"""Replies a looping model or a hostile endpoint sends: thousands of tool calls in one reply. The turn
stays bounded (calls run, approvals asked, results kept) and the history stays valid."""

from __future__ import annotations

import json
from pathlib import Path

from agent_scripted import ScriptedModel, assert_valid_history, text

from nanohermes.agent.loop import Agent
from nanohermes.agent.prompts import base_system_prompt
from nanohermes.agent.turns import MAX_CALLS_PER_REPLY, drop_cut_calls
from nanohermes.config.settings import Settings
from nanohermes.core.events import Note, ToolFinished, TurnFinished
from nanohermes.core.protocols import ApprovalRequest, Decision
from nanohermes.core.types import ChatResult, ToolCall, Usage
from nanohermes.sessions.store import SessionFile
from nanohermes.tools.runner import ToolRunner


def _agent(tmp_path: Path, model: ScriptedModel, runner: ToolRunner) -> Agent:
    return Agent(
        model,
        runner,
        Settings(model="m"),
        base_system_prompt(runner.workspace.root, memory=False),
        session=SessionFile(tmp_path / "s.json"),
        workspace=str(runner.workspace.root),
    )


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("hello\n")
    return workspace


def _reply(calls: list[ToolCall], finish_reason: str = "tool_calls", content: str = "") -> ChatResult:
    return ChatResult(content=content, tool_calls=calls, finish_reason=finish_reason, usage=Usage(1, 1, 2))


def test_a_reply_of_10000_tool_calls_runs_the_first_ones_and_tells_user_and_model(tmp_path: Path) -> None:
    """10,000 calls in one reply ran all 10,000, put 10,000 results in the history (a 1.6 MB session
    file, 200 MB with 20 KB results, sent again with every later request) and printed 10,000 lines."""
    reads = [ToolCall(f"c{n}", "read_file", '{"path": "a.txt"}') for n in range(10_000)]
    model = ScriptedModel([_reply(reads, content="Reading."), text("done")])
    runner = ToolRunner(_workspace(tmp_path), permission="auto", approver=None, store=None)
    agent = _agent(tmp_path, model, runner)
    events = list(agent.run("read it"))
    finished = events[-1]
    assert isinstance(finished, TurnFinished)
    assert finished.completed
    assert sum(isinstance(e, ToolFinished) for e in events) == MAX_CALLS_PER_REPLY
    warnings = [e.text for e in events if isinstance(e, Note) and e.level == "warning"]
    assert warnings == [
        f"the model asked for 10,000 tool calls in one reply; only the first {MAX_CALLS_PER_REPLY} ran"
    ]
    sent = model.stream_requests[1]["messages"]
    assistant = sent[2]
    assert [call["id"] for call in assistant["tool_calls"]] == [f"c{n}" for n in range(MAX_CALLS_PER_REPLY)]
    assert assistant["content"].startswith("Reading.\n\n[9,936 more tool calls of this reply were not run")
    assert_valid_history(sent)
    assert agent.flush(10)
    saved = SessionFile(tmp_path / "s.json").load().messages
    assert_valid_history(saved)
    assert len(saved) == 3 + MAX_CALLS_PER_REPLY + 1


def test_a_flood_of_writes_in_ask_mode_asks_a_bounded_number_of_questions(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return Decision.NO

    writes = [
        ToolCall(f"w{n}", "write_file", json.dumps({"path": f"f{n}", "content": "x"})) for n in range(500)
    ]
    model = ScriptedModel([_reply(writes), text("ok")])
    runner = ToolRunner(_workspace(tmp_path), permission="ask", approver=approver, store=None)
    agent = _agent(tmp_path, model, runner)
    events = list(agent.run("write"))
    assert len(asked) == MAX_CALLS_PER_REPLY
    assert sum(isinstance(e, ToolFinished) for e in events) == MAX_CALLS_PER_REPLY
    assert_valid_history(agent.messages)


def test_a_reply_cut_by_the_token_cap_drops_the_cut_call_then_the_excess() -> None:
    whole = [ToolCall(f"c{n}", "read_file", '{"path": "a.txt"}') for n in range(MAX_CALLS_PER_REPLY + 5)]
    cut = ToolCall("cut", "read_file", '{"path": "a.t')
    result = _reply([*whole, cut], finish_reason="length")
    note = drop_cut_calls(result)
    assert note == (
        "1 tool call(s) cut by the output-token cap were not run; "
        f"the model asked for {MAX_CALLS_PER_REPLY + 5} tool calls in one reply; "
        f"only the first {MAX_CALLS_PER_REPLY} ran"
    )
    assert result.tool_calls == whole[:MAX_CALLS_PER_REPLY]
    assert result.content == "[5 more tool calls of this reply were not run: at most 64 run per reply]"


def test_a_reply_of_exactly_the_cap_is_left_whole() -> None:
    calls = [ToolCall(f"c{n}", "read_file", "{}") for n in range(MAX_CALLS_PER_REPLY)]
    result = _reply(list(calls), content="text")
    assert drop_cut_calls(result) == ""
    assert result.tool_calls == calls
    assert result.content == "text"
