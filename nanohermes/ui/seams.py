"""What the UI gets from the composition root (`app.wiring`, never imported here), and the loader that
builds the runtime in the background while the REPL's prompt is up."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
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

    settings: Settings
    agent: Agent
    store: MemoryStore | None
    checkpoints: Checkpoints | None
    mcp: McpManager | None

    @property
    def sandbox(self) -> Sandbox | None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ResumePreview:
    """A resumed session as the REPL shows it before the runtime is built: its name and messages."""

    name: str
    messages: Sequence[Message] = ()
    notices: Sequence[str] = ()  # warnings about opening it


RuntimeBuilder = Callable[["CliOptions", "Settings", Approver | None], RuntimeLike]


class RuntimeLoader:
    """Builds the runtime once, on a thread of its own; `get()` waits for it (and re-raises its error)."""

    def __init__(self, build: Callable[[], RuntimeLike], preview: ResumePreview | None = None) -> None:
        self.preview = preview  # the session being resumed, already read; None for a new one
        self.built: Future[RuntimeLike] = Future()  # its done callbacks run on the builder thread
        self._build = build
        self._thread = threading.Thread(target=self._run, name="nh-build", daemon=True)

    @property
    def ready(self) -> bool:
        return self.built.done() and self.built.exception() is None

    @property
    def error(self) -> BaseException | None:
        return self.built.exception() if self.built.done() else None

    def start(self) -> None:
        """Once; only the REPL's thread calls it."""
        if self._thread.ident is None:
            self._thread.start()

    def get(self) -> RuntimeLike:
        self.start()
        return self.built.result()

    def _run(self) -> None:
        try:
            self.built.set_result(self._build())
        except Exception as err:  # handed to the main thread by get() and the done callbacks
            self.built.set_exception(err)
