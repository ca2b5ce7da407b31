"""Tool-call arguments that Python's JSON decoder cannot take at all (nesting too deep raises
RecursionError, a number over the digit limit a plain ValueError): an ERROR result for the model, the
turn goes on, the history stays valid — never a traceback out of the loop."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_scripted import ScriptedModel, assert_valid_history, text

from nanohermes.agent.loop import Agent
from nanohermes.agent.prompts import base_system_prompt
from nanohermes.agent.turns import drop_cut_calls
from nanohermes.config.settings import Settings
from nanohermes.core.events import ToolFinished, TurnFinished
from nanohermes.core.toolcalls import call_arguments, key_argument
from nanohermes.core.types import ChatResult, ToolCall, Usage
from nanohermes.sessions.store import SessionFile
from nanohermes.tools.runner import ToolRunner

DEEP = '{"path": ' + "[" * 100_000 + "]" * 100_000 + "}"
HUGE_NUMBER = '{"path": "a.txt", "limit": ' + "9" * 5_000 + "}"


def _agent(tmp_path: Path, model: ScriptedModel) -> Agent:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("hello\n")
    runner = ToolRunner(workspace, permission="auto", approver=None, store=None)
    return Agent(
        model,
        runner,
        Settings(model="m"),
        base_system_prompt(workspace, memory=False),
        session=SessionFile(tmp_path / "s.json"),
        workspace=str(workspace),
    )


@pytest.mark.parametrize("arguments", [DEEP, HUGE_NUMBER], ids=["nested-too-deep", "5000-digit-number"])
def test_undecodable_arguments_are_an_error_result_and_the_turn_goes_on(
    tmp_path: Path, arguments: str
) -> None:
    reply = ChatResult(
        tool_calls=[ToolCall("c1", "read_file", arguments)], finish_reason="tool_calls", usage=Usage(1, 1, 2)
    )
    model = ScriptedModel([reply, text("done")])
    agent = _agent(tmp_path, model)
    events = list(agent.run("read it"))
    finished = events[-1]
    assert isinstance(finished, TurnFinished)
    assert finished.completed
    results = [e.result for e in events if isinstance(e, ToolFinished)]
    assert len(results) == 1
    assert results[0].content.startswith("ERROR: arguments for read_file could not be decoded")
    assert "\n" not in results[0].content
    assert_valid_history(agent.messages)
    assert agent.flush(5)


def test_call_summaries_survive_arguments_nested_too_deep() -> None:
    call = ToolCall("c1", "read_file", DEEP)
    assert call_arguments(call) == {}
    assert key_argument(call, 20).startswith('{"path"')


def test_a_reply_cut_by_the_token_cap_with_arguments_nested_too_deep_drops_that_call() -> None:
    deep = ToolCall(id="c1", name="read_file", arguments=DEEP)
    whole = ToolCall(id="c2", name="read_file", arguments='{"path": "a.txt"}')
    result = ChatResult(content="", tool_calls=[deep, whole], finish_reason="length")
    assert drop_cut_calls(result) == "1 tool call(s) cut by the output-token cap were not run"
    assert result.tool_calls == [whole]


def test_agents_md_quoting_the_memory_marker_keeps_the_rest_of_the_prompt(tmp_path: Path) -> None:
    """An AGENTS.md that quotes the memory block's opening line (documenting nanohermes, say) had
    everything after the quote cut from the system prompt by the first turn's `set_block`."""
    from nanohermes.memory import BLOCK_END, BLOCK_START, set_block

    (tmp_path / "AGENTS.md").write_text(
        f"Memories arrive under `{BLOCK_START}`.\nAlways run `make lint` before committing.\n"
        f"{BLOCK_END} ends them.\n"
    )
    base = base_system_prompt(tmp_path, memory=True)
    block = f"{BLOCK_START}\n- [Fact] uses tabs\n{BLOCK_END}"
    system = set_block(set_block(base, block), block)
    assert "Always run `make lint` before committing." in system
    assert system.count(BLOCK_START) == 1
    assert system.endswith(block)
