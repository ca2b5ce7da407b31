"""Small fakes at the UI's seams (agent, runtime) and a plain rich console on a StringIO."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any

from rich.console import Console

from nanohermes.checkpoints import Checkpoints
from nanohermes.config.settings import Settings, load_settings
from nanohermes.core.cancel import CancelToken
from nanohermes.core.events import Compacted, Event, Note, RecalledMemory, TextDelta, TurnFinished
from nanohermes.core.types import Message, Usage
from nanohermes.memory import MemoryStore
from nanohermes.tools.sandbox import Sandbox

SPEC_COMMANDS = (
    "/help",
    "/exit",
    "/reset",
    "/compact",
    "/memory",
    "/mcp",
    "/session",
    "/sessions",
    "/model",
    "/permission",
    "/tokens",
    "/diff",
    "/undo",
    "/checkpoints",
)
"""The slash commands SPEC §7 names, written out here (not derived from COMMANDS) so tests check them."""


def plain_console(width: int = 100) -> tuple[Console, StringIO]:
    out = StringIO()
    return Console(file=out, width=width, color_system=None, force_terminal=False), out


def memory_store(folder: Path, *entries: dict[str, Any]) -> MemoryStore:
    """A store whose memory.json holds `entries` as a person or an older version wrote them: ids of
    any shape, texts that `remember` would refuse."""
    folder.mkdir(parents=True, exist_ok=True)
    full = [{"source": "user", "ts": 1, **entry} for entry in entries]
    (folder / "memory.json").write_text(json.dumps({"version": 1, "entries": full}), encoding="utf-8")
    return MemoryStore(folder)


class FakeAgent:
    """Answers each turn with scripted deltas; `delay` between deltas; honours the cancel token."""

    def __init__(self, session_path: Path, replies: list[list[Event]] | None = None) -> None:
        self._session_path = session_path
        self.replies = list(replies or [])
        self.delay = 0.0
        self._messages: list[Message] = [{"role": "system", "content": "sys"}]
        self._usage = Usage()
        self.model_name = "fake-model"
        self.permission = "ask"
        self.saved = 0
        self.recalled: tuple[RecalledMemory, ...] = ()
        self.waited = 0
        self.stopped = False
        self.background: list[Event] = []
        self.seen_cancel: CancelToken | None = None

    def run(self, user_content: str, cancel: CancelToken | None = None, /) -> Iterator[Event]:
        self.seen_cancel = cancel
        self._messages.append({"role": "user", "content": user_content})
        events = self.replies.pop(0) if self.replies else [TextDelta(f"echo: {user_content}")]
        answer = ""
        for event in events:
            if cancel is not None and cancel.wait(self.delay):
                yield Note("interrupted by user", "warning")
                yield TurnFinished(False, "interrupted")
                return
            if isinstance(event, TextDelta):
                answer += event.text
            yield event
        self._messages.append({"role": "assistant", "content": answer})
        self._usage = self._usage + Usage(10, 5, 15)
        yield TurnFinished(True, "done", Usage(10, 5, 15), answer)

    def compact(self, cancel: CancelToken | None = None, /) -> Iterator[Event]:
        yield Compacted(5000, 1000)

    def reset(self) -> None:
        self._messages = self._messages[:1]

    def save(self) -> None:
        self.saved += 1
        self._session_path.parent.mkdir(parents=True, exist_ok=True)  # like the real agent: the file
        self._session_path.touch()  # exists once saved

    def wait_for_distillation(self, timeout: float | None = None, /) -> bool:
        self.waited += 1
        return True

    def stop_distillation(self) -> None:
        self.stopped = True

    def drain_background_events(self) -> list[Event]:
        events, self.background = self.background, []
        return events

    def set_model(self, name: str, /) -> None:
        self.model_name = name

    def set_permission(self, mode: str, /) -> None:
        self.permission = mode

    @property
    def messages(self) -> list[Message]:
        return self._messages

    @property
    def usage(self) -> Usage:
        return self._usage

    @property
    def session_path(self) -> Path:
        return self._session_path

    @property
    def model(self) -> str:
        return self.model_name


@dataclass
class FakeRuntime:
    settings: Settings
    agent: FakeAgent
    store: MemoryStore | None
    checkpoints: Checkpoints | None = None
    sandbox: Sandbox | None = None
    mcp: Any = None
    closed: bool = False

    def close(self) -> None:
        self.closed = True


def fake_runtime(store: MemoryStore | None = None, **settings: Any) -> FakeRuntime:
    loaded = load_settings({"model": "fake-model", **settings})
    path = loaded.sessions_dir / "20260101-120000.json"
    return FakeRuntime(loaded, FakeAgent(path), store)
