"""The agent loop (SPEC §4.1), headless: it yields events; the UI renders them. A turn: inject the
memory block, run the steps until a TurnOver, save the session, distill if completed, TurnFinished."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING

from nanohermes.agent.distiller import Distiller
from nanohermes.agent.turns import Steps, Turn
from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import StoreError
from nanohermes.core.events import Event, MemoryRecalled, Note, RecalledMemory, TurnFinished
from nanohermes.core.protocols import TurnChanges
from nanohermes.core.types import Message, Usage, plural, shorten, with_images
from nanohermes.llm import ChatClient
from nanohermes.memory import recall_for_turn, set_block
from nanohermes.sessions.autosave import SessionSaver
from nanohermes.sessions.store import SessionData, SessionFile

if TYPE_CHECKING:
    from nanohermes.checkpoints import Checkpoints
    from nanohermes.config.settings import Settings
    from nanohermes.memory import MemoryStore
    from nanohermes.tools import ToolRunner


class Agent(Steps):
    """One conversation: messages, memory injection, tools, compaction, session file, distillation."""

    _tools: ToolRunner

    def __init__(
        self,
        model: ChatClient,
        tools: ToolRunner,
        config: Settings,
        system_prompt: str,
        *,
        session: SessionFile,
        store: MemoryStore | None = None,
        resumed: SessionData | None = None,
        workspace: str = "",
        checkpoints: Checkpoints | None = None,
        attach_images: Callable[[str], tuple[list[str], list[str]]] | None = None,
        verbose: bool = False,
        save_each_turn: bool = True,
    ) -> None:
        """`attach_images`: the images a message names (`@shot.png`) as data URLs, and notes."""
        self._store, self._checkpoints = store, checkpoints
        self.session_path = session.path
        self._attach_images = attach_images
        self._system = system_prompt
        # The session file's content; its messages, archive and usage are the live state (no copies).
        self._data = resumed or SessionData()
        self._data.workspace = workspace or self._data.workspace
        self._data.model = config.model or ""
        self._save_each_turn = save_each_turn
        history = [m for m in self._data.messages if m.get("role") != "system"]
        self._data.messages = [{"role": "system", "content": system_prompt}, *history]
        super().__init__(
            model,
            tools,
            config,
            self._data.messages,
            add_usage=self.add_turn_usage,
            archive=self._data.archive,
        )
        self._block = ""
        self.recalled: tuple[RecalledMemory, ...] = ()  # the current block's memories (`/memory last`)
        self._lock = threading.Lock()
        self._turn: Turn | None = None  # the running turn, whose usage sub-agents add to
        self._background: list[Event] = []
        secrets = (config.api_key_value() or "",)  # a short or empty key is no secret (hide_secrets)
        self._saver = SessionSaver(session, self._data, secrets=secrets, post_note=self.post_note)
        self._distiller = Distiller(
            model,
            store,
            model_name=lambda: config.distill_model or self.model,
            post_note=self.post_note,
            add_usage=functools.partial(self.add_turn_usage, in_turn=False),
            verbose=verbose,
        )

    @property
    def usage(self) -> Usage:
        return self._data.usage  # frozen: replaced whole, never changed in place

    def add_turn_usage(self, usage: Usage, *, in_turn: bool = True) -> None:
        """Tokens in the totals and in the running turn's count (`-p --json`); a distillation's are
        not in a turn's (it may run into the next one)."""
        with self._lock:
            self._data.usage += usage
            if in_turn and self._turn is not None:
                self._turn.usage += usage

    def set_model(self, name: str) -> None:
        self.model = self._data.model = name.strip() or self.model

    def set_permission(self, mode: str) -> None:
        self._tools.set_permission(mode)

    def post_note(self, note: Note) -> None:
        with self._lock:
            self._background.append(note)

    def drain_background_events(self) -> list[Event]:
        with self._lock:
            events, self._background = self._background, []
        return events

    def run(self, user_content: str, cancel: CancelToken | None = None) -> Iterator[Event]:
        """One user turn (SPEC §4.1); ends with exactly one TurnFinished."""
        cancel = cancel or CancelToken()
        if (yield from self._prompt_blocked(user_content, cancel)):
            return
        images, refused = self._attach_images(user_content) if self._attach_images else ([], [])
        for text in refused:
            yield Note(text, "warning")
        notes = self._checkpoints.model_notes() if self._checkpoints is not None else []
        # the user's message, after a note for each turn the user undid since the last one
        turn = Turn({"role": "user", "content": with_images("\n\n".join([*notes, user_content]), images)})
        self._turn = turn
        if self._checkpoints is not None:
            self._checkpoints.begin_turn(user_content)
        yield from self._inject_memory(user_content)
        self.messages.append(turn.user_message)
        try:
            over = yield from self.run_steps(turn, cancel)
        except GeneratorExit:  # the caller stopped listening: keep the history valid and saved
            self._interrupt(turn)
            self._end_checkpoint()
            self._saver.in_background()
            raise
        finally:  # its model calls are over: later usage (distillation) counts in the totals only
            with self._lock:
                self._turn = None
        if over.note:
            yield over.note
        changes = self._end_checkpoint()
        yield from checkpoint_notes(changes)
        if self._save_each_turn:
            self._saver.in_background()
        if over.completed:
            excerpt = messages_of_turn(self.messages, turn.user_message)
            self._distiller.start(excerpt, had_tools=turn.had_tools)
        if self._tools.hooks is not None:  # the agent runs user_prompt and stop; the tools the rest
            yield from self._tools.hooks.run("stop", cancel, last_assistant_message=over.answer).notes
        yield TurnFinished(over.completed, over.reason, turn.usage, over.answer, changes.files)

    def _prompt_blocked(self, prompt: str, cancel: CancelToken) -> Generator[Event, None, bool]:
        """True when a user_prompt hook blocked the prompt (the turn is then over)."""
        if self._tools.hooks is None:
            return False
        outcome = self._tools.hooks.run("user_prompt", cancel, prompt=prompt)
        yield from outcome.notes
        if not outcome.reason:
            return False
        yield Note(f"prompt blocked by a user_prompt hook: {shorten(outcome.reason, 500)}", "error")
        yield TurnFinished(False, "error")
        return True

    def _end_checkpoint(self) -> TurnChanges:
        return self._checkpoints.end_turn() if self._checkpoints is not None else TurnChanges()

    def _inject_memory(self, query: str) -> Iterator[Event]:
        if self._store is None:
            return
        try:
            recall = recall_for_turn(self._store, query, self._block, self._config.language)
        except StoreError as err:
            yield Note(f"memory not available for this turn: {err.one_line()}", "warning")
            return
        if not recall.kept:
            self.recalled = recall.memories
        if recall.block and self.recalled:
            yield MemoryRecalled(self.recalled)
        if recall.block != self._block:
            self._block = recall.block
            self.messages[0] = {"role": "system", "content": set_block(self._system, recall.block)}

    def wait_for_distillation(self, timeout: float | None = None) -> bool:
        return self._distiller.wait(timeout)  # True when none is left running

    def stop_distillation(self) -> None:
        self._distiller.cancel.cancel()

    def compact(self, cancel: CancelToken | None = None) -> Iterator[Event]:
        done = yield from self._compact(cancel or CancelToken(), threshold=None)
        if not done:
            yield Note("nothing to compact yet")
            return
        self._saver.in_background()

    def reset(self) -> None:
        """/reset: the conversation goes to the archive; the system prompt stays."""
        self._data.archive.extend(self.messages[1:])
        self._block = ""
        self.recalled = ()
        self.messages[:] = [{"role": "system", "content": self._system}]

    def save(self) -> None:
        """Write now, after any pending write (none when nothing changed). Raises SessionError."""
        self._saver.submit().result()

    def flush(self, timeout: float | None = None) -> bool:
        return self._saver.flush(timeout)


def checkpoint_notes(changes: TurnChanges) -> Iterator[Event]:
    for line in changes.notes:
        yield Note(line, "warning")
    if changes.files:
        count = len(changes.files)
        shown = ", ".join(changes.files[:5]) + (f" and {count - 5} more" if count > 5 else "")
        yield Note(f"checkpoint {changes.turn}: {plural(count, 'file')} changed ({shown})")


def messages_of_turn(messages: list[Message], user_message: Message) -> list[Message]:
    """A turn's messages from its user message on; when a compaction took that message out, it goes
    back in front of what follows the summary: the distiller must read what the user said first."""
    start = next((i for i, m in enumerate(messages) if m is user_message), None)
    if start is not None:
        return list(messages[start:])
    return [user_message, *messages[2:]]
