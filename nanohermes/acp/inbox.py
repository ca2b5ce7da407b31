"""What a turn's worker thread hands to its prompt coroutine, in order, with streamed text batched.

`put` is called on worker threads; the event loop is woken once per batch, not once per item (fewer
thread switches). Text streamed in a burst is joined: at most one text update per TEXT_INTERVAL.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from typing import Generic, TypeVar, cast

from nanohermes.core.events import ReasoningDelta, TextDelta

T = TypeVar("T")
TEXT_INTERVAL = 0.008
"""Seconds between two text updates of a turn (about one editor frame)."""


class Inbox(Generic[T]):
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: collections.deque[T] = collections.deque()
        self._ready = asyncio.Event()
        self._lock = threading.Lock()
        self._wake_pending = False
        self._last_text = 0.0

    def put(self, item: T) -> None:
        """Raises RuntimeError when the event loop is closed."""
        with self._lock:
            self._items.append(item)
            if self._wake_pending:
                return
            self._wake_pending = True
        self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        with self._lock:
            self._wake_pending = False
        self._ready.set()

    async def get(self) -> T:
        """The next item. Text is sent at most once per TEXT_INTERVAL: the pieces streamed
        meanwhile join into one update (a fast model's burst costs a few messages, not hundreds;
        a slow stream is sent piece by piece as it comes)."""
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        item = self._items.popleft()
        if isinstance(item, TextDelta | ReasoningDelta):
            text: TextDelta | ReasoningDelta = item
            kind = type(text)
            await self._gather(kind)
            self._last_text = time.monotonic()
            pieces = [text.text]
            while self._items and type(self._items[0]) is kind:
                pieces.append(cast(TextDelta | ReasoningDelta, self._items.popleft()).text)
            return cast(T, kind("".join(pieces)))
        return item

    async def _gather(self, kind: type[TextDelta | ReasoningDelta]) -> None:
        """In a burst (the last text update was under TEXT_INTERVAL ago), wait for the rest of the
        frame — unless something else (a tool call, the turn's end) is already waiting behind."""
        deadline = self._last_text + TEXT_INTERVAL
        while (left := deadline - time.monotonic()) > 0:
            if self._items and type(self._items[-1]) is not kind:
                return
            self._ready.clear()
            try:
                await asyncio.wait_for(self._ready.wait(), left)
            except TimeoutError:
                return
