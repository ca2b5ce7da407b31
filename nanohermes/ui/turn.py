"""Run one agent operation (a turn, /compact) in a worker thread; the main thread keeps the terminal:
it renders, answers the worker's approval questions, and turns Ctrl-C into a cancel."""

from __future__ import annotations

import contextlib
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING

from nanohermes.core.cancel import CancelToken, cancel_in_background, signals_handled
from nanohermes.core.errors import Cancelled, NanoHermesError
from nanohermes.core.events import Event, Note, ReasoningDelta, TextDelta
from nanohermes.core.protocols import Decision
from nanohermes.ui.approve import PendingApproval
from nanohermes.ui.safe_text import is_terminal

if TYPE_CHECKING:
    from nanohermes.ui.approve import TerminalApprover
    from nanohermes.ui.render import Renderer

EventSource = Callable[[CancelToken], Iterator[Event]]
STOP_GRACE_SECONDS = 10.0
POLL_SECONDS = 0.1
_Item = Event | PendingApproval | None  # None: the worker is done


class TurnDriver:
    def __init__(self, renderer: Renderer, approver: TerminalApprover) -> None:
        self.renderer = renderer
        self.approver = approver
        self.exit_signal: int | None = None  # SIGTERM or SIGHUP cancelled a turn: the REPL should end

    def run(self, source: EventSource) -> bool:
        """True when `source` finished without being interrupted."""
        token = CancelToken()
        items: queue.Queue[_Item] = queue.Queue()
        self.approver.attach(items.put, token)
        worker = threading.Thread(target=_work, args=(source, token, items), name="nh-turn", daemon=True)
        self.renderer.begin_turn()
        try:
            with signals_handled(self._cancel_on_signal(token)), quiet_terminal():
                worker.start()
                self._pump(items, token)
        finally:
            self.renderer.end_turn()
            self.approver.detach()
        return not token.cancelled

    def _pump(self, items: queue.Queue[_Item], token: CancelToken) -> None:
        """Render until the worker ends; after a cancel, give it STOP_GRACE_SECONDS to wind down."""
        cancelled_at: float | None = None
        while True:
            try:
                item = items.get(timeout=POLL_SECONDS)
            except queue.Empty:
                self.renderer.tick()
                if token.cancelled:
                    cancelled_at = cancelled_at or time.monotonic()
                    if time.monotonic() - cancelled_at > STOP_GRACE_SECONDS:
                        self.renderer.note(
                            "the interrupted turn is still stopping in the background", "warning"
                        )
                        return
                continue
            if item is None:
                return
            try:
                self._show(item, token)
            except KeyboardInterrupt:  # Ctrl-C pressed inside an approval question
                token.cancel()

    def _show(self, item: Event | PendingApproval, token: CancelToken) -> None:
        if isinstance(item, TextDelta | ReasoningDelta) and token.cancelled:
            return  # a fast server's backlog, megabytes ahead of the screen, must not delay the stop
        if not isinstance(item, PendingApproval):
            self.renderer.handle(item)
            return
        if token.cancelled:
            item.resolve(Decision.NO)
            return
        self.renderer.pause()
        try:
            self.approver.answer(item)
        finally:
            self.renderer.resume()

    def _cancel_on_signal(self, token: CancelToken) -> Callable[[int, FrameType | None], None]:
        """Ctrl-C cancels the turn instead of raising mid-render; SIGTERM and SIGHUP also end the REPL."""

        def handler(signum: int, frame: FrameType | None) -> None:
            if signum != signal.SIGINT:
                self.exit_signal = signum
            cancel_in_background(token)

        return handler


@contextlib.contextmanager
def quiet_terminal() -> Iterator[None]:
    """While a turn streams, keys typed are not echoed (nor `^C`: they would break the live region);
    they stay buffered for the next prompt."""
    if sys.platform == "win32" or not is_terminal(sys.stdin):  # (Windows has no termios)
        yield
        return
    import termios

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    quiet = list(saved)
    quiet[3] &= ~(termios.ECHO | termios.ECHOCTL)
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


def _work(source: EventSource, token: CancelToken, items: queue.Queue[_Item]) -> None:
    """Every outcome reaches the main thread as an event, never as a dead thread."""
    try:
        for event in source(token):
            items.put(event)
    except Cancelled:
        items.put(Note("interrupted", "warning"))
    except NanoHermesError as err:
        items.put(Note(err.one_line(), "error"))
    except Exception as err:  # thread boundary: report it instead of dying silently
        items.put(Note(f"internal error: {type(err).__name__}: {err}", "error"))
    finally:
        items.put(None)
