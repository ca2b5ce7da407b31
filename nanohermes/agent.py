"""The agent loop (SPEC §4.1). Headless: it yields events; the UI renders them.

    run(user_content)
      inject memory block → append user message → step() until a _TurnOver is raised:
        step: compact if needed → stream the model → append the assistant message →
              no tool calls? raise _TurnOver(completed) : run the calls, append results in order
      every early exit (answer, max_iterations, Ctrl-C, model error) ends in ONE except-chain
      → save the session → distill in the background if completed → TurnFinished

Whatever happens, the history stays valid for the next request: every tool call gets a result
("interrupted by user" when it got none) and an interrupted reply is kept, marked.
"""

from __future__ import annotations

import concurrent.futures
import json
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from nanohermes.cancel import CancelToken
from nanohermes.compaction import compact, summary_request, total_chars
from nanohermes.errors import (
    INTERRUPTED,
    LENGTH_NOTE,
    Cancelled,
    ContextOverflow,
    IncompleteStream,
    LLMError,
    SessionError,
    StoreError,
)
from nanohermes.events import (
    Compacted,
    Event,
    MemoryRecalled,
    Note,
    RecalledMemory,
    TextDelta,
    ToolFinished,
    TurnFinished,
)
from nanohermes.llm import extract_text_tool_calls
from nanohermes.memory import (
    distill_messages,
    parse_distill,
    recall_for_turn,
    save_distilled,
    set_block,
    worth_distilling,
)
from nanohermes.protocols import ChatModel, ToolExecutor, TurnChanges, TurnRecorder
from nanohermes.session import SessionData, SessionFile, Snapshot
from nanohermes.types import ChatResult, Message, ToolCall, ToolResult, Usage, message_text

if TYPE_CHECKING:
    from nanohermes.memory import MemoryStore
    from nanohermes.settings import Settings


class AgentTools(ToolExecutor, Protocol):
    """The tool executor plus the permission switch (`nanohermes.tools.ToolRunner`)."""

    def set_permission(self, mode: str) -> None: ...


@dataclass(frozen=True)
class AgentConfig:
    model: str
    distill_model: str | None = None
    """None: distil with the current chat model (follows /model)."""
    max_iterations: int = 50
    compact_threshold_chars: int = 120_000
    compact_keep_messages: int = 10
    language: str = "en"
    verbose: bool = False
    save_each_turn: bool = True
    """False in one-shot mode: the caller saves once, after the turn's distillation."""

    @classmethod
    def from_settings(
        cls, settings: Settings, *, verbose: bool = False, save_each_turn: bool = True
    ) -> AgentConfig:
        return cls(
            model=settings.model or "",
            distill_model=settings.distill_model,
            max_iterations=settings.max_iterations,
            compact_threshold_chars=settings.compact_threshold_chars,
            compact_keep_messages=settings.compact_keep_messages,
            language=settings.language,
            verbose=verbose,
            save_each_turn=save_each_turn,
        )


class _TurnOver(Exception):
    """An early (or normal) exit from the loop, caught in one place in `run`."""

    def __init__(self, completed: bool, reason: str, note: Note | None = None, answer: str = "") -> None:
        super().__init__(reason)
        self.completed, self.reason, self.note, self.answer = completed, reason, note, answer


def _drop_cut_calls(result: ChatResult) -> int:
    """With `finish_reason: length` a call may be cut mid-arguments: never run one whose arguments
    are not a complete JSON object. Returns how many were dropped."""
    if result.finish_reason != "length":
        return 0
    kept = [call for call in result.tool_calls if _complete_arguments(call.arguments)]
    dropped = len(result.tool_calls) - len(kept)
    result.tool_calls = kept
    return dropped


def _complete_arguments(text: str) -> bool:
    try:
        return isinstance(json.loads(text or "{}"), dict)
    except ValueError:
        return False


def _reply_over(result: ChatResult) -> _TurnOver:
    """How a reply without tool calls ends the turn: an answer, a refusal, or an answer cut short."""
    if result.refusal and not result.content.strip():
        return _TurnOver(False, "refusal", Note("the model refused to answer", "error"), result.refusal)
    if result.finish_reason == "length":
        return _TurnOver(False, "length", Note(LENGTH_NOTE, "error"), result.content)
    return _TurnOver(True, "done", answer=result.content)


@dataclass
class _Turn:
    user_message: Message
    had_tools: bool = False
    usage: Usage = field(default_factory=Usage)
    partial: list[str] | None = None
    """Text streamed so far by the current model call; None when no call is streaming."""


class Agent:
    """One conversation: messages, memory injection, tools, compaction, session file, distillation."""

    def __init__(
        self,
        model: ChatModel,
        tools: AgentTools,
        config: AgentConfig,
        system_prompt: str,
        *,
        session: SessionFile,
        store: MemoryStore | None = None,
        resumed: SessionData | None = None,
        workspace: str = "",
        secrets: tuple[str, ...] = (),
        checkpoints: TurnRecorder | None = None,
    ) -> None:
        self._model, self._tools, self._config = model, tools, config
        self._checkpoints = checkpoints
        self._model_name = config.model
        self._store, self._session, self._secrets = store, session, secrets
        self._system = system_prompt
        # The session file's content; its messages, archive and usage are the live state (no copies).
        self._data = resumed or SessionData()
        self._data.workspace = workspace or self._data.workspace
        history = [m for m in self._data.messages if m.get("role") != "system"]
        self._data.messages = [{"role": "system", "content": system_prompt}, *history]
        self._block = ""
        self.recalled: tuple[RecalledMemory, ...] = ()
        """The memories in the current block, with scores and matched terms (`/memory last`)."""
        self._lock = threading.Lock()
        self._background: list[Event] = []
        self._threads: list[threading.Thread] = []
        self._bg_cancel = CancelToken()
        self._writer = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="nh-session")
        self._saved_state: tuple[object, ...] | None = self._state()  # nothing to save yet

    # -- state -----------------------------------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        return self._data.messages

    @property
    def archive(self) -> list[Message]:
        """Messages archived since the last save (older ones are in the session's archive file)."""
        return self._data.archive

    @property
    def archived_count(self) -> int:
        """Every message ever archived in this session, saved or not."""
        return self._data.archived + len(self._data.archive)

    @property
    def usage(self) -> Usage:
        with self._lock:
            return self._data.usage

    def _add_usage(self, usage: Usage) -> None:
        with self._lock:
            self._data.usage += usage

    @property
    def session_path(self) -> Path:
        return self._session.path

    @property
    def model(self) -> str:
        return self._model_name

    @property
    def distill_model(self) -> str:
        return self._config.distill_model or self._model_name

    def set_model(self, name: str) -> None:
        self._model_name = name.strip() or self._model_name

    def set_permission(self, mode: str) -> None:
        self._tools.set_permission(mode)

    def post_note(self, note: Note) -> None:
        """Queue a note for the UI (background distillation, store notices)."""
        with self._lock:
            self._background.append(note)

    def drain_background_events(self) -> list[Event]:
        with self._lock:
            events, self._background = self._background, []
        return events

    # -- a turn ----------------------------------------------------------------------------------

    def run(self, user_content: str, cancel: CancelToken | None = None) -> Iterator[Event]:
        """One user turn (SPEC §4.1). Ends with exactly one TurnFinished."""
        cancel = cancel or CancelToken()
        turn = _Turn({"role": "user", "content": self._with_undo_notes(user_content)})
        if self._checkpoints is not None:
            self._checkpoints.begin_turn(user_content)
        yield from self._inject_memory(user_content)
        self.messages.append(turn.user_message)
        try:
            over = yield from self._loop(turn, cancel)
        except GeneratorExit:  # the caller stopped listening: keep the history valid and saved
            self._interrupt(turn)
            self._end_checkpoint()
            self._save_in_background()
            raise
        if over.note:
            yield over.note
        changes = self._end_checkpoint()
        yield from _checkpoint_notes(changes)
        if self._config.save_each_turn:
            self._save_in_background()
        if over.completed:
            self._start_distillation(turn)
        yield TurnFinished(over.completed, over.reason, turn.usage, over.answer, changes.files)

    def _with_undo_notes(self, user_content: str) -> str:
        """The user's message, after a note for each turn the user undid since the last one."""
        notes = self._checkpoints.model_notes() if self._checkpoints is not None else []
        return "\n\n".join([*notes, user_content])

    def _end_checkpoint(self) -> TurnChanges:
        return self._checkpoints.end_turn() if self._checkpoints is not None else TurnChanges()

    def _loop(self, turn: _Turn, cancel: CancelToken) -> Generator[Event, None, _TurnOver]:
        try:
            for _ in range(self._config.max_iterations):
                yield from self._step(turn, cancel)
            limit = self._config.max_iterations
            raise _TurnOver(False, "max_iterations", Note(f"stopped after {limit} model calls", "warning"))
        except _TurnOver as over:
            return over
        except Cancelled:
            self._interrupt(turn)
            return _TurnOver(False, "interrupted", Note(INTERRUPTED, "warning"))
        except LLMError as err:
            turn.partial = None
            return _TurnOver(False, "error", Note(err.one_line(), "error"))

    def _step(self, turn: _Turn, cancel: CancelToken) -> Iterator[Event]:
        yield from self._compact_if_needed(cancel)
        result = yield from self._call_model(turn, cancel)
        calls = result.tool_calls
        if not calls and result.content:
            result.content, calls = extract_text_tool_calls(result.content, self._tools.names())
            result.tool_calls = calls
        cut = _drop_cut_calls(result)
        self.messages.append(result.to_message())
        turn.partial = None
        if cut:
            yield Note(f"{cut} tool call(s) cut by the output-token cap were not run", "warning")
        if not result.tool_calls:
            raise _reply_over(result)
        calls = result.tool_calls
        turn.had_tools = True
        yield from self._run_tools(calls, cancel)
        cancel.raise_if_cancelled()

    def _call_model(self, turn: _Turn, cancel: CancelToken) -> Generator[Event, None, ChatResult]:
        try:
            return (yield from self._stream(turn, cancel))
        except ContextOverflow:
            compacted = yield from self._compact(cancel, threshold=None)
            if not compacted:
                raise
            return (yield from self._stream(turn, cancel))

    def _stream(self, turn: _Turn, cancel: CancelToken) -> Generator[Event, None, ChatResult]:
        turn.partial = []
        result: ChatResult | None = None
        tools = self._tools.schemas() or None
        for item in self._model.stream(self.messages, tools, model=self._model_name, cancel=cancel):
            if isinstance(item, ChatResult):
                result = item
                continue
            if isinstance(item, TextDelta):
                turn.partial.append(item.text)
            yield item
        if result is None:
            raise IncompleteStream("the model stream ended without a result", "try again")
        turn.usage += result.usage
        self._add_usage(result.usage)
        return result

    def _run_tools(self, calls: list[ToolCall], cancel: CancelToken) -> Iterator[Event]:
        """Results are appended in call order; calls without a result get `interrupted by user`."""
        results: list[ToolResult] = []
        try:
            for event in self._tools.run_calls(calls, cancel):
                if isinstance(event, ToolFinished):
                    results.append(event.result)
                yield event
        finally:
            for index, call in enumerate(calls):
                got = results[index] if index < len(results) else None
                result = got or ToolResult(call.id, call.name, INTERRUPTED, ok=False)
                self.messages.append({**result.to_message(), "tool_call_id": call.id})

    def _interrupt(self, turn: _Turn) -> None:
        """Keep a partially streamed reply, marked, when the turn was cut during the stream."""
        if turn.partial is None:
            return
        text = "".join(turn.partial).rstrip()
        turn.partial = None
        marker = f"[{INTERRUPTED}]"
        self.messages.append({"role": "assistant", "content": f"{text}\n\n{marker}" if text else marker})

    # -- memory ----------------------------------------------------------------------------------

    def _inject_memory(self, query: str) -> Iterator[Event]:
        if self._store is None:
            return
        try:
            recall = recall_for_turn(self._store, query, self._block, self._config.language)
        except StoreError as err:
            yield Note(f"memory not available for this turn: {err.one_line()}", "warning")
            return
        block = recall.block
        if not recall.kept:
            self.recalled = recall.memories
        if block and self.recalled:
            yield MemoryRecalled(self.recalled)
        if block != self._block:
            self._block = block
            self.messages[0] = {"role": "system", "content": set_block(self._system, block)}

    def _start_distillation(self, turn: _Turn) -> None:
        if self._store is None or not worth_distilling(str(turn.user_message["content"]), turn.had_tools):
            return
        start = next((i for i, m in enumerate(self.messages) if m is turn.user_message), 1)
        excerpt = list(self.messages[start:])
        thread = threading.Thread(
            target=self._distill, args=(excerpt,), name="nanohermes-distill", daemon=True
        )
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _distill(self, excerpt: list[Message]) -> None:
        store = self._store
        if store is None:
            return
        try:
            result = self._model.complete(
                distill_messages(excerpt), None, model=self.distill_model, cancel=self._bg_cancel
            )
            # The turn's user message is each memory's context: indexed, never shown (SPEC §3.7).
            context = message_text(excerpt[0]) if excerpt and excerpt[0].get("role") == "user" else ""
            items = parse_distill(result.content)
            saved = save_distilled(store, items, "auto", self._distill_refused, context=context)
        except StoreError as err:  # disk full, read-only directory, lock timeout: never silent
            self.post_note(Note(f"memory not saved: {err.one_line()}", "warning"))
            return
        except Exception as err:  # background thread: failures are silent unless --verbose
            if self._config.verbose:
                self.post_note(Note(f"distillation failed: {type(err).__name__}: {err}", "debug"))
            return
        self._add_usage(result.usage)
        if saved:
            self.post_note(Note(f"{saved} {'memory' if saved == 1 else 'memories'} saved"))
        elif self._config.verbose:
            self.post_note(Note("distillation found nothing durable to remember", "debug"))

    def _distill_refused(self, text: str, reason: str) -> None:
        if self._config.verbose:
            self.post_note(Note(f"distilled memory refused: {reason}: {text!r}", "debug"))

    def wait_for_distillation(self, timeout: float | None = None) -> bool:
        """Wait for running distillations; True when none is left running."""
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            return not self._threads

    # -- compaction, reset, persistence ----------------------------------------------------------

    def compact(self, cancel: CancelToken | None = None) -> Iterator[Event]:
        """/compact: summarise everything but the recent messages now."""
        done = yield from self._compact(cancel or CancelToken(), threshold=None)
        if not done:
            yield Note("nothing to compact yet")
            return
        self._save_in_background()

    def _compact_if_needed(self, cancel: CancelToken) -> Iterator[Event]:
        threshold = self._config.compact_threshold_chars
        if total_chars(self.messages) > threshold:
            yield from self._compact(cancel, threshold=threshold)

    def _compact(self, cancel: CancelToken, *, threshold: int | None) -> Generator[Event, None, bool]:
        def summarize(middle: list[Message]) -> str:
            result = self._model.complete(
                summary_request(middle), None, model=self._model_name, cancel=cancel
            )
            self._add_usage(result.usage)
            return result.content

        outcome = compact(
            self.messages, keep=self._config.compact_keep_messages, summarize=summarize, threshold=threshold
        )
        if outcome is None:
            return False
        self.messages[:] = outcome.messages
        self.archive.extend(outcome.removed)
        if outcome.note:
            yield Note(outcome.note, "warning")
        yield Compacted(outcome.before_chars, outcome.after_chars, outcome.summarized)
        return True

    def reset(self) -> None:
        """/reset: clear the conversation (kept in the archive), keep the system prompt."""
        self.archive.extend(self.messages[1:])
        self._block = ""
        self.recalled = ()
        self.messages[:] = [{"role": "system", "content": self._system}]

    def save(self) -> None:
        """Write the session file now, after any pending background write. Raises SessionError."""
        self._submit_save().result()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait for pending background writes of the session file; True when none is left."""
        try:  # the writer is one thread, first in first out: a no-op runs after every earlier write
            self._writer.submit(lambda: None).result(timeout)
        except concurrent.futures.TimeoutError:
            return False
        return True

    def _submit_save(self) -> concurrent.futures.Future[None]:
        """Render here (a snapshot consistent with this thread); write + fsync in the writer thread,
        in submission order, so a turn never waits on the disk. Nothing changed since the last
        save: no write (the returned future still waits for the earlier ones)."""
        self._data.model = self._model_name
        state = self._state()
        if state == self._saved_state:
            return self._writer.submit(_nothing)
        snapshot = SessionFile.render(self._data, secrets=self._secrets)
        self._saved_state = state
        return self._writer.submit(self._write, snapshot)

    def _write(self, snapshot: Snapshot) -> None:
        try:
            self._session.write(snapshot)
        except BaseException:
            self._saved_state = None  # the next save writes again, whatever changed
            raise

    def _state(self) -> tuple[object, ...]:
        """What a save would change: cheap to compute, different after anything that needs saving."""
        last = self.messages[-1] if self.messages else None
        return (len(self.messages), id(last), len(self._data.archive), self._data.usage, self._model_name)

    def _save_in_background(self) -> None:
        self._submit_save().add_done_callback(self._report_save)

    def _report_save(self, future: concurrent.futures.Future[None]) -> None:
        err = future.exception()
        if isinstance(err, SessionError):
            self.post_note(Note(err.one_line(), "error"))
        elif err is not None:
            self.post_note(Note(f"could not save the session: {type(err).__name__}: {err}", "error"))


def _checkpoint_notes(changes: TurnChanges) -> Iterator[Event]:
    for line in changes.notes:
        yield Note(line, "warning")
    if changes.files:
        count = len(changes.files)
        shown = ", ".join(changes.files[:5]) + (f" and {count - 5} more" if count > 5 else "")
        yield Note(
            f"checkpoint {changes.turn}: {count} {'file' if count == 1 else 'files'} changed ({shown})"
        )


def _nothing() -> None:
    return None
