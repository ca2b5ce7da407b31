"""What the UI needs from the objects `wiring.build_runtime` composes, as Protocols.

The UI sits above the agent but never imports the composition root; the REPL gets a builder callable
and works with whatever satisfies these shapes (tests pass small fakes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from nanohermes.core.cancel import CancelToken
from nanohermes.core.events import Event, RecalledMemory
from nanohermes.core.protocols import Approver
from nanohermes.core.types import Message, Usage

if TYPE_CHECKING:
    from nanohermes.checkpoints import Checkpoints
    from nanohermes.config.options import CliOptions
    from nanohermes.config.settings import Settings
    from nanohermes.mcp.status import ServerStatus
    from nanohermes.tools.sandbox import Sandbox


class ChatAgent(Protocol):
    """The agent as the REPL drives it (implemented by `nanohermes.agent.loop.Agent`)."""

    def run(self, user_content: str, cancel: CancelToken | None = None, /) -> Iterator[Event]: ...

    def compact(self, cancel: CancelToken | None = None, /) -> Iterator[Event]: ...

    def reset(self) -> object: ...

    def save(self) -> object: ...

    def wait_for_distillation(self, timeout: float | None = None, /) -> bool: ...

    def stop_distillation(self) -> object: ...

    def drain_background_events(self) -> list[Event]: ...

    def set_model(self, name: str, /) -> object: ...

    def set_permission(self, mode: str, /) -> object: ...

    @property
    def messages(self) -> Sequence[Message]: ...

    @property
    def usage(self) -> Usage: ...

    @property
    def session_path(self) -> str | Path | None: ...

    @property
    def model(self) -> str: ...

    @property
    def recalled(self) -> Sequence[RecalledMemory]: ...


class MemoryEntry(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def kind(self) -> Any: ...

    @property
    def text(self) -> str: ...

    @property
    def project(self) -> str | None: ...


class MemoryStatsLike(Protocol):
    """The part of `nanohermes.memory.MemoryStats` that /memory stats shows."""

    @property
    def path(self) -> Path: ...

    @property
    def size_bytes(self) -> int: ...

    @property
    def total(self) -> int: ...

    @property
    def per_kind(self) -> Mapping[Any, int]: ...


class MemoryStoreLike(Protocol):
    """The slice of `nanohermes.memory.MemoryStore` that /memory uses."""

    @property
    def project(self) -> str | None: ...

    @property
    def last_id(self) -> str | None: ...

    def load(self) -> Sequence[MemoryEntry]: ...

    def visible(self) -> Sequence[MemoryEntry]: ...

    def get(self, memory_id: str, /) -> MemoryEntry | None: ...

    def for_project(self, project: str | None, /) -> MemoryStoreLike: ...

    def remember(self, kind: Any, text: str, source: str = ..., *, scope: str | None = ...) -> bool: ...

    def search(self, query: str, top_k: int = ..., /) -> Sequence[tuple[float, MemoryEntry]]: ...

    def forget(self, memory_id: str, /) -> bool: ...

    def matching_ids(self, wanted: str, /, *, everywhere: bool = ...) -> list[str]: ...

    def stats(self) -> MemoryStatsLike: ...


class McpLike(Protocol):
    """The slice of `nanohermes.mcp.McpManager` that /mcp uses."""

    def status(self) -> Sequence[ServerStatus]: ...


class RuntimeLike(Protocol):
    """`wiring.Runtime` as the REPL sees it."""

    @property
    def settings(self) -> Settings: ...

    @property
    def agent(self) -> ChatAgent: ...

    @property
    def store(self) -> MemoryStoreLike | None: ...

    @property
    def checkpoints(self) -> Checkpoints | None: ...

    @property
    def sandbox(self) -> Sandbox | None: ...

    @property
    def mcp(self) -> McpLike | None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ResumePreview:
    """A resumed session as the REPL shows it before the runtime is built: its name and messages."""

    name: str
    messages: Sequence[Message] = ()
    notices: Sequence[str] = ()
    """Warnings about opening it, shown under the banner."""


RuntimeBuilder = Callable[["CliOptions", "Settings", Approver | None], RuntimeLike]
