"""Run one agent operation (a turn, /compact) in a worker thread and render its events in this one.

The main thread keeps the terminal: it renders events, answers approval questions posted by the
worker, and turns Ctrl-C into `CancelToken.cancel()` at once, then drains the worker's last events
(the interrupted tool results, the TurnFinished) for a bounded time.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from nanohermes.cancel import CancelToken
from nanohermes.errors import Cancelled, NanoHermesError
from nanohermes.events import Event, Note
from nanohermes.protocols import Decision
from nanohermes.ui.approve import PendingApproval

if TYPE_CHECKING:
    from nanohermes.ui.approve import TerminalApprover
    from nanohermes.ui.render import Renderer

EventSource = Callable[[CancelToken], Iterator[Event]]
STOP_GRACE_SECONDS = 10.0


class _End:
    """Sentinel: the worker is done."""


_Item = Event | PendingApproval | _End


class TurnDriver:
    def __init__(self, renderer: Renderer, approver: TerminalApprover | None) -> None:
        self.renderer = renderer
        self.approver = approver

    def run(self, source: EventSource, label: str = "thinking…") -> bool:
        """Run `source` to the end; True when it finished without being interrupted."""
        token = CancelToken()
        items: queue.Queue[_Item] = queue.Queue()
        if self.approver is not None:
            self.approver.attach(items.put, token)
        worker = threading.Thread(target=_work, args=(source, token, items), name="nh-turn", daemon=True)
        self.renderer.begin_turn(label)
        interrupted = False
        try:
            worker.start()
            try:
                self._pump(items)
            except KeyboardInterrupt:
                interrupted = True
                token.cancel()
                self._drain_after_cancel(items, worker)
        finally:
            self.renderer.end_turn()
            if self.approver is not None:
                self.approver.detach()
        return not interrupted

    def _pump(self, items: queue.Queue[_Item]) -> None:
        while True:
            item = items.get()
            if isinstance(item, _End):
                return
            self._show(item)

    def _show(self, item: Event | PendingApproval) -> None:
        if isinstance(item, PendingApproval):
            self.renderer.pause()
            try:
                if self.approver is not None:
                    self.approver.answer(item)
                else:
                    item.resolve(Decision.NO)
            finally:
                self.renderer.resume()
        else:
            self.renderer.handle(item)

    def _drain_after_cancel(self, items: queue.Queue[_Item], worker: threading.Thread) -> None:
        """Render what the cancelled worker still emits; more Ctrl-C presses are ignored here."""
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while time.monotonic() < deadline:
            try:
                item = items.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            except KeyboardInterrupt:
                continue
            if isinstance(item, _End):
                return
            if isinstance(item, PendingApproval):
                item.resolve(Decision.NO)
                continue
            try:
                self.renderer.handle(item)
            except KeyboardInterrupt:
                continue
        if worker.is_alive():
            self.renderer.note("the interrupted turn is still stopping in the background", "warning")


def _work(source: EventSource, token: CancelToken, items: queue.Queue[_Item]) -> None:
    """Worker thread body: every outcome reaches the main thread as an event, never as a dead thread."""
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
        items.put(_End())
