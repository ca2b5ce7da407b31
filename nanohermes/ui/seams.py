"""What the UI gets from the composition root (`app.wiring`), which sits above it and is never imported
here: the runtime's shape, the builder callable and a resumed session's preview."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from nanohermes.core.protocols import Approver
from nanohermes.core.types import Message

if TYPE_CHECKING:
    from nanohermes.agent.loop import Agent
    from nanohermes.checkpoints import Checkpoints
    from nanohermes.config.options import CliOptions
    from nanohermes.config.settings import Settings
    from nanohermes.mcp.manager import McpManager
    from nanohermes.memory import MemoryStore
    from nanohermes.tools.sandbox import Sandbox


class RuntimeLike(Protocol):
    """`app.wiring.Runtime` as the UI sees it (tests pass small fakes)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def agent(self) -> Agent: ...

    @property
    def store(self) -> MemoryStore | None: ...

    @property
    def checkpoints(self) -> Checkpoints | None: ...

    @property
    def sandbox(self) -> Sandbox | None: ...

    @property
    def mcp(self) -> McpManager | None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ResumePreview:
    """A resumed session as the REPL shows it before the runtime is built: its name and messages."""

    name: str
    messages: Sequence[Message] = ()
    notices: Sequence[str] = ()
    """Warnings about opening it, shown under the banner."""


RuntimeBuilder = Callable[["CliOptions", "Settings", Approver | None], RuntimeLike]
