"""Build the runtime (agent, model client, memory, tools) in the background while the prompt is up.

Importing and wiring the core costs more than drawing the prompt; a session needs none of it until the
first Enter, so the REPL draws the prompt first and lets this thread build meanwhile. `get()` waits
for it (and re-raises its error on the caller's thread).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nanohermes.ui.seams import ResumePreview, RuntimeLike


class RuntimeLoader:
    def __init__(self, build: Callable[[], RuntimeLike], preview: ResumePreview | None = None) -> None:
        """`preview`: the session being resumed, already read (its summary is shown before the
        runtime is built); None for a new session."""
        self.preview = preview
        self.on_done: Callable[[BaseException | None], None] | None = None
        """Called on the builder thread with the error (or None) when the build ends."""
        self._build = build
        self._built: Future[RuntimeLike] = Future()
        self._thread = threading.Thread(target=self._run, name="nh-build", daemon=True)
        self._lock = threading.Lock()

    @property
    def ready(self) -> bool:
        return self._built.done() and self._built.exception() is None

    @property
    def error(self) -> BaseException | None:
        return self._built.exception() if self._built.done() else None

    def start(self) -> None:
        """Start building in a background thread (once)."""
        with self._lock:
            if self._thread.ident is None:
                self._thread.start()

    def get(self) -> RuntimeLike:
        """Wait for the runtime; re-raise the builder's error here."""
        self.start()
        return self._built.result()

    def _run(self) -> None:
        try:
            self._built.set_result(self._build())
        except Exception as err:  # handed to the main thread by get() and on_done
            self._built.set_exception(err)
        if self.on_done is not None:
            self.on_done(self.error)
