"""Compaction during a turn, and what the turn's distillation then sees."""

from __future__ import annotations

from pathlib import Path

from agent_scripted import ScriptedModel, assert_valid_history, calls, text

from nanohermes.agent.compaction import SUMMARY_PREFIX
from nanohermes.agent.loop import Agent
from nanohermes.config.settings import Settings
from nanohermes.core.events import Compacted, TurnFinished
from nanohermes.memory import MemoryStore
from nanohermes.sessions.store import SessionFile
from nanohermes.tools import ToolRunner


def test_distillation_after_a_compaction_mid_turn_starts_with_the_users_message(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "big.txt").write_text("x" * 3000)
    model = ScriptedModel([*(calls(("read_file", {"path": "big.txt"})) for _ in range(4)), text("done")])
    model.completions.append(text("Goal: read big.txt."))
    store = MemoryStore(tmp_path / "mem")
    agent = Agent(
        model,
        ToolRunner(workspace, permission="auto", approver=None, store=store),
        Settings(model="m", compact_threshold_chars=1_000, compact_keep_messages=3),
        "SYSTEM",
        session=SessionFile(tmp_path / "s.json"),
        store=store,
    )
    events = list(agent.run("read big.txt a few times; from now on I prefer tabs over spaces"))
    assert any(isinstance(event, Compacted) for event in events)
    assert isinstance(events[-1], TurnFinished)
    assert events[-1].completed
    assert_valid_history(agent.messages)
    assert not any("prefer tabs" in str(m.get("content")) for m in agent.messages)  # compacted away
    assert agent.wait_for_distillation(30)

    [request] = model.distill_requests
    excerpt = request["messages"][-1]["content"]
    assert "[user] read big.txt a few times; from now on I prefer tabs over spaces" in excerpt
    assert SUMMARY_PREFIX not in excerpt  # the summary of earlier turns is not this turn
