"""The agent loop with a scripted model and the real ToolRunner and MemoryStore (SPEC §4.1–4.2, §3.6)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_scripted import ScriptedModel, assert_valid_history, calls, text

from nanohermes.agent.loop import Agent
from nanohermes.agent.prompts import base_system_prompt
from nanohermes.config.settings import Settings
from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import ContextOverflow, LLMError, SessionError
from nanohermes.core.events import Compacted, Event, Note, StreamItem, TextDelta, ToolFinished, TurnFinished
from nanohermes.core.types import ChatResult, Message
from nanohermes.memory import BLOCK_START, MemoryStore
from nanohermes.sessions.store import SessionData, SessionFile, Snapshot
from nanohermes.tools.base import tool_from_function
from nanohermes.tools.runner import ToolRunner


def make_agent(
    tmp_path: Path,
    model: ScriptedModel,
    *,
    memory: bool = True,
    permission: str = "auto",
    **config: object,
) -> tuple[Agent, ToolRunner, MemoryStore | None]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    store = MemoryStore(tmp_path / "mem") if memory else None
    runner = ToolRunner(workspace, permission=permission, approver=None, store=store)
    agent = Agent(
        model,
        runner,
        Settings(model="main-model", api_key="sk-SECRET-key-0123456789", **config),  # type: ignore[arg-type]
        base_system_prompt(workspace, memory=memory),
        session=SessionFile(tmp_path / "sessions" / "s.json"),
        store=store,
        workspace=str(workspace),
    )
    return agent, runner, store


def run(agent: Agent, prompt: str, cancel: CancelToken | None = None) -> list[Event]:
    events = list(agent.run(prompt, cancel))
    assert sum(isinstance(e, TurnFinished) for e in events) == 1
    assert isinstance(events[-1], TurnFinished)
    return events


def finished(events: list[Event]) -> TurnFinished:
    last = events[-1]
    assert isinstance(last, TurnFinished)
    return last


def archived_count(agent: Agent) -> int:
    """Every message ever archived in the agent's session, saved or not."""
    return agent._data.archived + len(agent._data.archive)


def errors(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, Note) and e.level == "error"]


def test_memory_block_is_injected_before_the_user_message_and_short_messages_keep_it(tmp_path: Path) -> None:
    model = ScriptedModel([text("Sure."), text("Continuing."), text("Done.")])
    agent, _, store = make_agent(tmp_path, model)
    assert store is not None
    store.remember("preference", "Always run the tests with pytest -q", source="user")
    run(agent, "how should I run the tests here?")
    system = model.stream_requests[0]["messages"][0]["content"]
    assert BLOCK_START in system
    assert system.rstrip().endswith("=== End long-term memory ===")
    assert "pytest -q" in system
    assert model.stream_requests[0]["messages"][-1] == {
        "role": "user",
        "content": "how should I run the tests here?",
    }
    run(agent, "go on")  # short, no hits: the previous block stays
    assert "pytest -q" in model.stream_requests[1]["messages"][0]["content"]
    run(agent, "describe how markdown rendering works")  # long, no hits: block removed
    assert BLOCK_START not in model.stream_requests[2]["messages"][0]["content"]


def test_parallel_calls_run_concurrently_and_results_come_in_call_order(tmp_path: Path) -> None:
    model = ScriptedModel(
        [calls(("slow_a", {}), ("read_file", {"path": "a.txt"}), ("slow_b", {}), ("nope", {})), text("ok")]
    )
    agent, runner, _ = make_agent(tmp_path, model)
    (tmp_path / "ws" / "a.txt").write_text("alpha\n", encoding="utf-8")
    barrier = threading.Barrier(2, timeout=10)

    def slow_a() -> str:
        """Waits for slow_b."""
        barrier.wait()
        return "A done"

    def slow_b() -> str:
        """Waits for slow_a."""
        barrier.wait()
        return "B done"

    runner.register(tool_from_function(slow_a))
    runner.register(tool_from_function(slow_b))
    events = run(agent, "do the four things")
    assert finished(events).completed
    results = [e.result for e in events if isinstance(e, ToolFinished)]
    assert [r.call_id for r in results] == ["call_1", "call_2", "call_3", "call_4"]
    tool_messages = [m for m in agent.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_1", "call_2", "call_3", "call_4"]
    assert tool_messages[0]["content"] == "A done"  # both passed the barrier: they ran at the same time
    assert "alpha" in tool_messages[1]["content"]
    assert tool_messages[2]["content"] == "B done"
    assert tool_messages[3]["content"].startswith("ERROR: unknown tool")
    assert_valid_history(agent.messages)


def test_text_form_tool_calls_are_recognised(tmp_path: Path) -> None:
    written = '<tool_call>{"name": "list_files", "arguments": {}}</tool_call>'
    model = ScriptedModel([text(written), text("There is one file.")])
    agent, _, _ = make_agent(tmp_path, model)
    (tmp_path / "ws" / "only.txt").write_text("x", encoding="utf-8")
    events = run(agent, "what files are there?")
    assert finished(events).answer == "There is one file."
    call_message = agent.messages[2]
    assert call_message["tool_calls"][0]["function"]["name"] == "list_files"
    assert "only.txt" in agent.messages[3]["content"]
    assert_valid_history(agent.messages)


def test_distillation_after_a_tool_turn_saves_auto_memories(tmp_path: Path) -> None:
    model = ScriptedModel([calls(("list_files", {})), text("Listed.")])
    model.distill = ['[{"kind": "lesson", "text": "The workspace keeps sources under src/."}]']
    agent, _, store = make_agent(tmp_path, model, distill_model="small-model")
    assert store is not None
    events = run(agent, "ls")
    assert finished(events).completed
    assert agent.wait_for_distillation(10)
    assert [e.text for e in agent.drain_background_events() if isinstance(e, Note)] == ["1 memory saved"]
    entries = store.load()
    assert [(e.text, e.source) for e in entries] == [("The workspace keeps sources under src/.", "auto")]
    assert entries[0].context == "ls"  # the turn's user message: indexed, never shown
    request = model.distill_requests[0]
    assert request["model"] == "small-model"
    assert request["tools"] is None
    assert "[user] ls" in request["messages"][1]["content"]


def test_small_talk_and_unfinished_turns_are_not_distilled(tmp_path: Path) -> None:
    model = ScriptedModel([text("Hi!"), LLMError("model 'x' not found"), calls(("list_files", {}))])
    agent, _, _ = make_agent(tmp_path, model, max_iterations=1)
    run(agent, "hi")
    failed = run(agent, "please always use tabs for indentation")
    assert finished(failed).reason == "error"
    assert [e.text for e in failed if isinstance(e, Note) and e.level == "error"] == ["model 'x' not found"]
    assert agent.messages[-1] == {"role": "user", "content": "please always use tabs for indentation"}
    stopped = run(agent, "list the files in this workspace for me please")
    assert finished(stopped).reason == "max_iterations"
    assert agent.wait_for_distillation(5)
    assert model.distill_requests == []
    assert_valid_history(agent.messages)


def test_no_memory_offers_no_memory_tools_and_writes_nothing(tmp_path: Path) -> None:
    model = ScriptedModel([calls(("memory_save", {"kind": "fact", "text": "x is y"})), text("ok")])
    agent, runner, _ = make_agent(tmp_path, model, memory=False)
    assert not {"memory_save", "memory_search", "memory_forget"} & runner.names()
    run(agent, "remember that x is y, it matters a lot")
    assert agent.wait_for_distillation(5)
    offered = {t["function"]["name"] for t in model.stream_requests[0]["tools"]}
    assert "memory_save" not in offered
    assert agent.messages[3]["content"].startswith("ERROR: unknown tool")
    assert not (tmp_path / "mem").exists()
    assert model.distill_requests == []


def _cancelled_mid_stream(messages: list[Message], cancel: CancelToken) -> Iterator[StreamItem | ChatResult]:
    """Streams half a reply, then the user presses Ctrl-C (the client raises Cancelled)."""
    yield TextDelta("I was about to ")
    yield TextDelta("say something")
    cancel.cancel()
    cancel.raise_if_cancelled()
    yield ChatResult(content="never")


def test_cancel_during_the_stream_keeps_the_partial_reply_marked(tmp_path: Path) -> None:
    model = ScriptedModel([_cancelled_mid_stream, text("Fresh answer.")])
    agent, _, _ = make_agent(tmp_path, model)
    events = run(agent, "tell me a long story please, with details")
    end = finished(events)
    assert (end.completed, end.reason) == (False, "interrupted")
    assert agent.messages[-1] == {
        "role": "assistant",
        "content": "I was about to say something\n\n[interrupted by user]",
    }
    assert agent.flush(10)
    assert SessionFile(agent.session_path).load().messages[-1] == agent.messages[-1]
    assert agent.wait_for_distillation(5)
    assert model.distill_requests == []
    assert finished(run(agent, "again")).completed
    assert_valid_history(agent.messages)


def test_cancel_during_tools_answers_every_call(tmp_path: Path) -> None:
    """Cancelled while two calls of a batch still run: each gets `interrupted by user`, the call that
    had finished keeps its result, all in call order, and the turn ends without waiting for the two.
    Cancelled on conditions, not after a delay, so a loaded machine gives the same outcome."""
    model = ScriptedModel([calls(("quick", {}), ("stuck", {}), ("stuck", {}))])
    agent, runner, _ = make_agent(tmp_path, model)
    stuck_running = threading.Semaphore(0)
    release = threading.Event()

    def quick() -> str:
        """Answers at once."""
        return "quick result"

    def stuck() -> str:
        """Runs until the test releases it, whatever the cancel token says."""
        stuck_running.release()
        release.wait(60)
        return "finished too late"

    runner.register(tool_from_function(quick))
    runner.register(tool_from_function(stuck))
    cancel = CancelToken()
    events: list[Event] = []
    try:
        for event in agent.run("run them", cancel):
            events.append(event)
            if isinstance(event, ToolFinished) and event.result.call_id == "call_1":
                assert stuck_running.acquire(timeout=30)
                assert stuck_running.acquire(timeout=30)
                cancel.cancel()  # both stuck calls are running, the quick one has its result
    finally:
        release.set()  # only now: had the turn waited for the stuck calls, they would have its answers
    assert finished(events).reason == "interrupted"
    tool_messages = [m for m in agent.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_1", "call_2", "call_3"]
    assert [m["content"] for m in tool_messages] == [
        "quick result",
        "interrupted by user",
        "interrupted by user",
    ]
    assert_valid_history(agent.messages)


def test_abandoned_generator_still_leaves_a_valid_saved_history(tmp_path: Path) -> None:
    model = ScriptedModel([calls(("list_files", {}), ("list_files", {}))])
    agent, _, _ = make_agent(tmp_path, model)
    for event in agent.run("list twice"):
        if isinstance(event, ToolFinished):
            break  # the caller stops listening after the first result (generator closed)
    assert_valid_history(agent.messages)
    assert agent.flush(10)
    assert_valid_history(SessionFile(agent.session_path).load().messages)


def test_context_overflow_compacts_once_and_retries(tmp_path: Path) -> None:
    model = ScriptedModel([text(f"answer {n}") for n in range(8)])
    agent, _, _ = make_agent(tmp_path, model, compact_keep_messages=4)
    for n in range(8):
        run(agent, f"question {n}")
    model.steps = [ContextOverflow("context length exceeded"), text("after compaction")]
    model.completions = [text("Goal: answer questions.")]
    events = run(agent, "one more")
    assert finished(events).answer == "after compaction"
    assert [e for e in events if isinstance(e, Compacted)]
    assert "Goal: answer questions." in agent.messages[1]["content"]
    assert archived_count(agent) > 0
    assert len(model.stream_requests) == 8 + 2  # the overflowing request and one retry
    assert len(model.complete_requests) == 1  # one summary
    model.steps = [ContextOverflow("still too long"), ContextOverflow("still too long"), text("never")]
    model.completions = [text("Goal again."), text("never")]
    failed = run(agent, "and another")
    assert finished(failed).reason == "error"
    assert len(model.stream_requests) == 10 + 2  # one compaction, one retry, then the error
    assert len(model.complete_requests) == 2
    assert agent.messages[-1] == {"role": "user", "content": "and another"}
    assert errors(failed) == ["still too long"]  # raised without a hint: kept as it is


def test_context_overflow_with_nothing_to_compact_says_what_would_help(tmp_path: Path) -> None:
    model = ScriptedModel([ContextOverflow("context length exceeded", "run /compact or start a new session")])
    agent, _, _ = make_agent(tmp_path, model)
    failed = run(agent, "x" * 50_000)
    assert finished(failed).reason == "error"
    hint = "the recent messages alone do not fit: /reset or a new session, or lower compact_keep_messages"
    assert errors(failed) == [f"context length exceeded ({hint})"]
    assert model.complete_requests == []  # no summary of nothing


def test_threshold_compaction_keeps_system_summary_recent_and_archive(tmp_path: Path) -> None:
    history: list[Message] = [{"role": "system", "content": "old system prompt from elsewhere"}]
    for n in range(16):
        history.append({"role": "user", "content": f"message number {n}"})
        history.append({"role": "assistant", "content": "z" * 8_000})
    session = SessionFile(tmp_path / "sessions" / "big.json")
    data = SessionData(messages=history)
    session.save(data)
    model = ScriptedModel([text("final")])
    model.completions = [text("Goal: stress test.")]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    agent = Agent(
        model,
        ToolRunner(workspace, permission="auto", approver=None, store=None),
        Settings(model="m", compact_threshold_chars=120_000, compact_keep_messages=10),
        "NEW SYSTEM",
        session=session,
        resumed=session.load(),
        workspace=str(workspace),
    )
    assert agent.messages[0] == {"role": "system", "content": "NEW SYSTEM"}  # rebuilt on resume
    assert sum(len(str(m["content"])) for m in agent.messages) > 120_000
    events = run(agent, "last one")
    compacted = [e for e in events if isinstance(e, Compacted)]
    assert len(compacted) == 1
    assert compacted[0].before_chars > 120_000 > compacted[0].after_chars
    sent = model.stream_requests[0]["messages"]
    assert sent[0] == {"role": "system", "content": "NEW SYSTEM"}
    assert sent[1]["content"].endswith("Goal: stress test.")
    assert sent[2:] == history[-9:] + [{"role": "user", "content": "last one"}]
    assert agent.messages[-1] == {"role": "assistant", "content": "final"}
    assert agent.flush(10)
    saved = SessionFile(agent.session_path).load()
    assert SessionFile(agent.session_path).load_archive() == history[1:-9]
    assert saved.archived == len(history[1:-9])
    assert (saved.id, saved.workspace) == (data.id, str(workspace))  # same session, current workspace
    assert saved.messages[1]["content"].startswith("[Summary of the earlier conversation")


def test_manual_compact_and_reset(tmp_path: Path) -> None:
    model = ScriptedModel([text(f"a{n}") for n in range(3)])
    model.completions = [text("Summary!")]
    agent, _, store = make_agent(tmp_path, model, compact_keep_messages=2)
    assert [type(e) for e in agent.compact()] == [Note]  # nothing to compact yet
    for n in range(3):
        run(agent, f"q{n}")
    assert [type(e) for e in agent.compact()] == [Compacted]
    assert agent.messages[1]["content"].endswith("Summary!")
    assert len(agent.messages) == 4
    agent.reset()
    assert [m["role"] for m in agent.messages] == ["system"]
    assert archived_count(agent) == 4 + 3  # compaction removed q0 a0 q1 a1; reset the summary, q2 and a2
    assert store is not None
    assert store.load() == []  # /reset never touches the memory store


def test_usage_model_switch_and_secret_never_saved(tmp_path: Path) -> None:
    model = ScriptedModel([text("Noted.")])
    agent, _, _ = make_agent(tmp_path, model)
    agent.set_model("other-model")
    run(agent, "my key is sk-SECRET-key-0123456789 do not store it")
    assert model.stream_requests[0]["model"] == "other-model"
    assert agent.wait_for_distillation(10)
    assert model.distill_requests[0]["model"] == "other-model"  # the distill model follows /model
    assert agent.usage.total_tokens == 15 + 15  # the turn and its distillation
    agent.save()
    text_on_disk = agent.session_path.read_text(encoding="utf-8")
    assert "sk-SECRET-key-0123456789" not in text_on_disk
    assert '"model":"other-model"' in text_on_disk


class _GatedSession(SessionFile):
    """A session file whose writes wait for `gate`, and fail with `failure` when it is set."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.gate = threading.Event()
        self.failure: SessionError | None = None

    def write(self, snapshot: Snapshot) -> None:
        assert self.gate.wait(10)
        if self.failure is not None:
            raise self.failure
        super().write(snapshot)


def test_session_writes_stay_off_the_turn_flush_waits_and_failures_become_notes(tmp_path: Path) -> None:
    model = ScriptedModel([text("one"), text("two")])
    session = _GatedSession(tmp_path / "sessions" / "gated.json")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    runner = ToolRunner(workspace, permission="auto", approver=None, store=None)
    agent = Agent(model, runner, Settings(model="m"), "SYSTEM", session=session)
    assert finished(run(agent, "first")).completed  # the turn did not wait for the blocked disk
    assert not agent.flush(0.05)
    assert not session.path.exists()
    session.gate.set()
    assert agent.flush(10)
    assert SessionFile(session.path).load().messages[-1] == {"role": "assistant", "content": "one"}
    session.failure = SessionError("cannot write session file gated.json: disk full", "free some space")
    assert finished(run(agent, "second")).completed
    assert agent.flush(10)
    notes = [(e.level, e.text) for e in agent.drain_background_events() if isinstance(e, Note)]
    assert notes == [("error", session.failure.one_line())]
    with pytest.raises(SessionError, match="disk full"):
        agent.save()
    assert SessionFile(session.path).load().messages[-1] == {"role": "assistant", "content": "one"}


class _CountingSession(SessionFile):
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.writes = 0

    def write(self, snapshot: Snapshot) -> None:
        self.writes += 1
        super().write(snapshot)


def _counting_agent(
    tmp_path: Path, model: ScriptedModel, *, save_each_turn: bool = True
) -> tuple[Agent, _CountingSession]:
    session = _CountingSession(tmp_path / "sessions" / "count.json")
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    runner = ToolRunner(workspace, permission="auto", approver=None, store=None)
    resumed = session.load() if session.exists() else None
    settings = Settings(model="m")
    agent = Agent(
        model, runner, settings, "S", session=session, resumed=resumed, save_each_turn=save_each_turn
    )
    return agent, session


def test_one_save_per_turn_and_none_without_a_change(tmp_path: Path) -> None:
    agent, session = _counting_agent(tmp_path, ScriptedModel([text("one")]))
    agent.save()
    assert session.writes == 0
    assert not session.exists(), "nothing said yet: no file"
    run(agent, "first")
    assert agent.flush(10)
    assert session.writes == 1
    agent.save()  # exit right after the turn: nothing changed
    agent.save()
    assert session.writes == 1
    agent.set_model("other")
    agent.save()
    assert session.writes == 2
    resumed, again = _counting_agent(tmp_path, ScriptedModel([]))
    resumed.save()  # a resumed session that did nothing is not rewritten (REPL exit)
    assert again.writes == 0


def test_one_shot_mode_saves_once_after_the_turn(tmp_path: Path) -> None:
    agent, session = _counting_agent(tmp_path, ScriptedModel([text("one")]), save_each_turn=False)
    run(agent, "first")
    assert agent.flush(10)
    assert session.writes == 0
    agent.save()
    assert session.writes == 1
    assert SessionFile(session.path).load().messages[-1] == {"role": "assistant", "content": "one"}


def test_a_failed_write_is_written_again_by_the_next_save(tmp_path: Path) -> None:
    agent, session = _counting_agent(tmp_path, ScriptedModel([text("one")]))
    session.path.mkdir(parents=True)  # cannot be replaced by a file
    run(agent, "first")
    assert agent.flush(10)
    assert [e for e in agent.drain_background_events() if isinstance(e, Note) and e.level == "error"]
    session.path.rmdir()
    agent.save()  # nothing changed since, but the last write failed
    assert SessionFile(session.path).load().messages[-1] == {"role": "assistant", "content": "one"}
