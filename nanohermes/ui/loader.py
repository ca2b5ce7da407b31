"""Build the runtime (agent, model client, memory, tools) in the background while the prompt is up.

Importing and wiring the core costs more than drawing the prompt; a new session needs none of it
until the first Enter, so the REPL draws the prompt first and lets this thread build meanwhile.
`get()` waits for it (and re-raises its error on the main thread).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nanohermes.ui.seams import ResumePreview, RuntimeLike


class RuntimeLoader:
    def __init__(self, build: Callable[[], RuntimeLike], preview: ResumePreview | None = None) -> None:
        """`preview`: the session being resumed, already read (its summary is shown before the
        runtime is built); None for a new session."""
        self._build = build
        self.preview = preview
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        self._runtime: RuntimeLike | None = None
        self._error: Exception | None = None
        self.on_done: Callable[[Exception | None], None] | None = None
        """Called on the builder thread with the error (or None) when a background build ends."""

    @property
    def ready(self) -> bool:
        return self._done.is_set() and self._runtime is not None

    @property
    def error(self) -> Exception | None:
        return self._error if self._done.is_set() else None

    def start(self) -> None:
        """Start building in a background thread (once)."""
        with self._lock:
            if self._thread is not None or self._done.is_set():
                return
            self._thread = threading.Thread(target=self._run, name="nh-build", daemon=True)
            self._thread.start()

    def load_now(self) -> RuntimeLike:
        """Build on this thread (used when resuming, so a bad session file is reported before the prompt)."""
        with self._lock:
            if self._thread is None and not self._done.is_set():
                self._thread = threading.current_thread()
                claimed = True
            else:
                claimed = False
        if claimed:
            self._run()
        return self.get()

    def get(self) -> RuntimeLike:
        """Wait for the runtime; re-raise the builder's error here."""
        self.start()
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._runtime is not None
        return self._runtime

    def _run(self) -> None:
        try:
            self._runtime = self._build()
        except Exception as err:  # handed to the main thread by get() and on_failure
            self._error = err
        finally:
            self._done.set()
        if self.on_done is not None:
            self.on_done(self._error)
