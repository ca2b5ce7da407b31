"""What a turn's thread hands to its prompt coroutine, in order, with streamed text batched: at most
one text update per TEXT_INTERVAL (a fast model's burst costs a few messages, not hundreds; a slow
stream is sent piece by piece as it comes)."""

from __future__ import annotations

import asyncio
import collections
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
        self._last_text = 0.0

    def put(self, item: T) -> None:
        """Called on the turn's thread. Raises RuntimeError when the event loop is closed."""
        self._items.append(item)
        self._loop.call_soon_threadsafe(self._ready.set)

    async def get(self) -> T:
        """The next item; text pieces streamed meanwhile join into one."""
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        item = self._items.popleft()
        if not isinstance(item, TextDelta | ReasoningDelta):
            return item
        text: TextDelta | ReasoningDelta = item
        if (left := self._last_text + TEXT_INTERVAL - time.monotonic()) > 0:
            await asyncio.sleep(left)  # a burst: what streams in for the rest of the frame joins it
        self._last_text = time.monotonic()
        pieces = [text.text]
        while self._items and type(self._items[0]) is type(text):
            pieces.append(cast(TextDelta | ReasoningDelta, self._items.popleft()).text)
        return cast(T, type(text)("".join(pieces)))
