"""Sub-agents compact their own context as the main loop does (SPEC §4.3, §4.6): a long exploration
must not end in a context-length error that loses everything the sub-agent found."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_scripted import ScriptedModel, assert_valid_history, calls, text
from test_agent_loop import make_agent

from nanohermes.agent.compaction import SUMMARY_PREFIX, SUMMARY_SYSTEM_PROMPT
from nanohermes.agent.subagents import BUILTIN_AGENTS, SubAgentRunner, make_task_tool
from nanohermes.config.settings import Settings
from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import ContextOverflow, ToolError
from nanohermes.core.events import TurnFinished
from nanohermes.core.types import Usage
from nanohermes.tools.runner import ToolRunner

TASK = "read big.txt twice and report its first word"
GENERAL = next(d for d in BUILTIN_AGENTS if d.name == "general")


def _sub(
    tmp_path: Path, model: ScriptedModel, *, threshold: int, keep: int, spent: list[Usage] | None = None
) -> SubAgentRunner:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "big.txt").write_text("alpha\n" + ("x" * 99 + "\n") * 50, encoding="utf-8")
    tools = ToolRunner(workspace, permission="auto", approver=None, store=None)
    return SubAgentRunner(
        model,
        tools,
        workspace=workspace,
        model_name=lambda: "sub",
        config=Settings(model="sub", compact_threshold_chars=threshold, compact_keep_messages=keep),
        add_usage=None if spent is None else spent.append,
    )


def test_a_sub_agent_over_the_threshold_summarises_and_keeps_its_task(tmp_path: Path) -> None:
    read = ("read_file", {"path": "big.txt"})
    model = ScriptedModel([calls(read), calls(read), text("alpha")])
    model.completions = [text("Read big.txt; it starts with alpha.")]
    sub = _sub(tmp_path, model, threshold=3_000, keep=2)
    assert sub.run(GENERAL, TASK, CancelToken()) == "alpha"
    [summary_request] = [r["messages"] for r in model.complete_requests]
    assert summary_request[0]["content"] == SUMMARY_SYSTEM_PROMPT
    last = model.stream_requests[2]["messages"]
    assert last[1] == {"role": "user", "content": TASK}  # the task itself is never summarised away
    assert last[2]["content"].startswith(SUMMARY_PREFIX)
    assert last[2]["content"].endswith("Read big.txt; it starts with alpha.")
    whole = [m for m in last if m["role"] == "tool" and m["content"].count("x" * 99) == 50]
    assert len(whole) == 1  # the newest read; the first one is in the summary
    assert_valid_history(last)


def test_a_sub_agent_whose_context_overflows_compacts_and_tries_again(tmp_path: Path) -> None:
    read = ("read_file", {"path": "big.txt"})
    overflow = ContextOverflow("maximum context length is 4096 tokens")
    model = ScriptedModel([calls(read), calls(read), overflow, text("alpha")])
    model.completions = [text("Read big.txt twice.")]
    sub = _sub(tmp_path, model, threshold=1_000_000, keep=1)
    assert sub.run(GENERAL, TASK, CancelToken()) == "alpha"
    retried = model.stream_requests[3]["messages"]
    assert retried[1]["content"] == TASK
    assert retried[2]["content"].startswith(SUMMARY_PREFIX)
    assert_valid_history(retried)


def test_a_sub_agent_with_nothing_to_compact_reports_the_overflow(tmp_path: Path) -> None:
    model = ScriptedModel([ContextOverflow("maximum context length is 4096 tokens")])
    sub = _sub(tmp_path, model, threshold=1_000_000, keep=1)
    with pytest.raises(ToolError, match="sub-agent 'general' failed: maximum context length"):
        sub.run(GENERAL, TASK, CancelToken())
    assert (len(model.stream_requests), model.complete_requests) == (1, [])


def test_a_sub_agents_tokens_count_in_the_session_totals(tmp_path: Path) -> None:
    read = ("read_file", {"path": "big.txt"})
    model = ScriptedModel([calls(read), calls(read), text("alpha")])
    model.completions = [text("Read big.txt; it starts with alpha.")]
    spent: list[Usage] = []
    sub = _sub(tmp_path, model, threshold=3_000, keep=2, spent=spent)
    assert sub.run(GENERAL, TASK, CancelToken()) == "alpha"
    assert len(spent) == 4  # three steps and the summary
    assert sum(spent, Usage()) == Usage(40, 20, 60)


def test_a_sub_agents_tokens_count_in_its_turn_and_in_the_session(tmp_path: Path) -> None:
    delegate = calls(("task", {"agent": "general", "task": TASK}))
    model = ScriptedModel([delegate, text("alpha"), text("It starts with alpha.")])  # the sub-agent's: 2nd
    agent, runner, _ = make_agent(tmp_path, model, memory=False)
    sub = SubAgentRunner(
        model,
        runner,
        workspace=tmp_path / "ws",
        model_name=lambda: "sub",
        config=Settings(model="sub"),
        add_usage=agent.add_turn_usage,
    )
    runner.register(make_task_tool({d.name: d for d in BUILTIN_AGENTS}, sub))
    events = list(agent.run("what does big.txt start with?"))
    finished = events[-1]
    assert isinstance(finished, TurnFinished)
    assert finished.answer == "It starts with alpha."
    assert finished.usage == Usage(30, 15, 45)  # two calls of the turn's own, one of the sub-agent
    assert agent.usage == Usage(30, 15, 45)
    list(agent.run("and now?"))
    assert agent.usage == Usage(40, 20, 60)  # nothing of the sub-agent counted twice
