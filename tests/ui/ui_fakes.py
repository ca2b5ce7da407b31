"""Small fakes at the UI's seams (agent, store, runtime) and a plain rich console on a StringIO."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any

from rich.console import Console

from nanohermes.checkpoints import Checkpoints
from nanohermes.config.settings import Settings, load_settings
from nanohermes.core.cancel import CancelToken
from nanohermes.core.events import Compacted, Event, Note, RecalledMemory, TextDelta, TurnFinished
from nanohermes.core.types import Message, Usage
from nanohermes.tools.sandbox import Sandbox
from nanohermes.ui.seams import McpLike, MemoryStoreLike

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


@dataclass(frozen=True)
class FakeEntry:
    id: str
    kind: str
    text: str
    project: str | None = None


@dataclass
class FakeStore:
    entries: list[FakeEntry] = field(default_factory=list)
    project: str | None = None

    def load(self) -> list[FakeEntry]:
        return list(self.entries)

    def visible(self) -> list[FakeEntry]:
        return list(self.entries)

    def for_project(self, project: str | None) -> FakeStore:
        return self

    def search(self, query: str, top_k: int = 4) -> list[tuple[float, FakeEntry]]:
        words = query.lower().split()
        hits = [(float(sum(w in e.text.lower() for w in words)), e) for e in self.entries]
        return sorted((h for h in hits if h[0] > 0), key=lambda h: -h[0])[:top_k]

    def forget(self, memory_id: str) -> bool:
        before = len(self.entries)
        self.entries = [e for e in self.entries if e.id != memory_id]
        return len(self.entries) < before

    def matching_ids(self, wanted: str, *, everywhere: bool = False) -> list[str]:
        ids = [e.id for e in self.entries]
        if wanted in ids:
            return [wanted]
        return [i for i in ids if len(wanted) >= 4 and i.startswith(wanted)]

    def stats(self) -> FakeStats:
        per_kind = Counter(e.kind for e in self.entries)
        return FakeStats(Path("/fake/memory.json"), 100 * len(self.entries), len(self.entries), per_kind)


@dataclass(frozen=True)
class FakeStats:
    path: Path
    size_bytes: int
    total: int
    per_kind: Mapping[str, int]


class FakeAgent:
    """Answers each turn with scripted deltas; `delay` between deltas; honours the cancel token."""

    def __init__(self, session_path: Path | None, replies: list[list[Event]] | None = None) -> None:
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
        if self._session_path is not None:  # like the real agent: the file exists once saved
            self._session_path.parent.mkdir(parents=True, exist_ok=True)
            self._session_path.touch()

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
    def session_path(self) -> str | None:
        return str(self._session_path) if self._session_path else None

    @property
    def model(self) -> str:
        return self.model_name


@dataclass
class FakeRuntime:
    settings: Settings
    agent: FakeAgent
    store: MemoryStoreLike | None
    checkpoints: Checkpoints | None = None
    sandbox: Sandbox | None = None
    mcp: McpLike | None = None
    closed: bool = False

    def close(self) -> None:
        self.closed = True


def fake_runtime(store: FakeStore | None = None, **settings: Any) -> FakeRuntime:
    loaded = load_settings({"model": "fake-model", **settings})
    path = loaded.sessions_dir / "20260101-120000.json"
    return FakeRuntime(loaded, FakeAgent(path), store)
