"""A cancellation token shared by the UI (which cancels) and the loop, client and tools (which stop)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TypeVar

from nanohermes.core.errors import Cancelled

T = TypeVar("T")

EXIT_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
"""Signals that end nanohermes. A running turn is cancelled first: its shell commands run in sessions
of their own, which the terminal's hang-up does not reach."""


class CancelToken:
    """Set once by Ctrl-C. Workers poll `cancelled`, sleep with `wait`, or register `on_cancel`
    callbacks that unblock them at once (close an HTTP response, kill a process group)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: dict[object, Callable[[], object]] = {}

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Run `callback` when cancelled (at once if already); returns its unregistering function."""
        with self._lock:
            if not self._event.is_set():
                key = object()
                self._callbacks[key] = callback
                return lambda: self._unregister(key)
        callback()
        return lambda: None

    def _unregister(self, key: object) -> None:
        with self._lock:
            self._callbacks.pop(key, None)

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True if cancelled meanwhile."""
        return self._event.wait(max(0.0, seconds))

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled()


def result_of(future: concurrent.futures.Future[T], token: CancelToken | None) -> T:
    """What `future` gives; Cancelled at once when `token` is (the future is cancelled too)."""
    unregister = token.on_cancel(future.cancel) if token is not None else (lambda: None)
    try:
        return future.result()
    except concurrent.futures.CancelledError:
        raise Cancelled() from None
    finally:
        unregister()


def cancel_in_background(token: CancelToken) -> None:
    """Cancel on a thread of its own: a signal handler runs on the thread it interrupted, which may
    hold the token's lock (or a lock a callback needs: closing the stream, killing a process group)."""
    threading.Thread(target=token.cancel, name="nh-cancel", daemon=True).start()


@contextlib.contextmanager
def signals_handled(handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    """`handler` for SIGINT, SIGTERM and SIGHUP while the block runs (on the main thread: both callers)."""
    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, *EXIT_SIGNALS)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
