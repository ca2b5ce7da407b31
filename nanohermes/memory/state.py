"""One version of memory.json as a store holds it, with what it derives from the entries.

Every entry has an order number: increasing in file order, never reused, so it survives removals
(the index, the duplicate keys and the eviction heap name entries by it, and it breaks ties of
equal score and ts). Derived data is made when first needed (JSON lines and duplicate keys by the
first write, the index by the first search) and then follows each change in place.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable

from nanohermes.memory.dedupe import Keys
from nanohermes.memory.entry import Entry, entry_from, json_text
from nanohermes.memory.index import Doc, Index
from nanohermes.memory.memfile import FORMAT_VERSION, Identity, Parsed, dump
from nanohermes.memory.text import is_duplicate, normalize

Rank = tuple[int, int, int]
"""(−eviction rank, ts, order): the smallest is evicted first (SPEC §3.4)."""


def _line(entry: Entry) -> bytes:
    return json_text(entry.to_dict()).encode()


def _rank(entry: Entry, order: int) -> Rank:
    return (-entry.kind.eviction_rank, entry.ts, order)


class State:
    """`entries` in file order, `orders` parallel to them; `kept` the items this version cannot use
    (JSON texts, written back after the entries), `top` the unknown top-level fields. `sees` says
    which entries the store's searches and duplicates see first; `doc` gives an entry's terms."""

    def __init__(
        self,
        sees: Callable[[Entry], bool],
        doc: Callable[[Entry], Doc],
        parsed: Parsed | None = None,
        identity: Identity | None = None,
    ) -> None:
        self.sees, self.doc, self.identity = sees, doc, identity
        self.version = FORMAT_VERSION if parsed is None else parsed.version
        self.top = [] if parsed is None else parsed.top
        self.entries: list[Entry] = []
        self.kept: list[str] = []
        self.order_of: dict[str, int] = {}
        for item in [] if parsed is None else parsed.items:
            entry = entry_from(item, self.order_of)
            if entry is None:
                self.kept.append(json_text(item))
            else:
                self.order_of[entry.id] = len(self.entries)
                self.entries.append(entry)
        self.orders = list(range(len(self.entries)))
        self._lines: list[bytes] | None = None
        self._keys: Keys | None = None
        self._index: Index | None = None

    def at(self, order: int) -> int | None:
        """The position of the entry with this order number, or None."""
        i = bisect.bisect_left(self.orders, order)
        return i if i < len(self.orders) and self.orders[i] == order else None

    def position(self, entry_id: str) -> int | None:
        order = self.order_of.get(entry_id)
        return None if order is None else self.at(order)

    def dump(self) -> list[bytes]:
        if self._lines is None:
            self._lines = [_line(entry) for entry in self.entries]
        return dump(self._lines, self.kept, self.top)

    def keys(self) -> Keys:
        if self._keys is None:
            self._keys = Keys()
            for order, entry in zip(self.orders, self.entries, strict=True):
                self._keys.add(order, normalize(entry.text))
        return self._keys

    def index(self) -> Index:
        if self._index is None:
            self._index = Index()
            for order, entry in zip(self.orders, self.entries, strict=True):
                if self.sees(entry):
                    self._index.add(order, entry, self.doc(entry))
        return self._index

    def duplicate(self, text: str, key: str) -> int | None:
        """The position of the entry `text` (normalized: `key`) duplicates: the first one the store
        sees, else the first of another project; None when there is none (SPEC §3.4)."""
        keys = self.keys()
        elsewhere = None
        for order in sorted(keys.candidates(key)):
            found = self.at(order)
            if found is not None and is_duplicate(text, self.entries[found].text, key, keys.key_of[order]):
                if self.sees(self.entries[found]):
                    return found
                elsewhere = found if elsewhere is None else elsewhere
        return elsewhere

    def append(self, entry: Entry) -> int:
        """Add `entry` after every other; its order number."""
        order = self.orders[-1] + 1 if self.orders else 0
        self.entries.append(entry)
        self.orders.append(order)
        self.order_of[entry.id] = order
        self._follow(order, entry, None)
        return order

    def replace(self, found: int, entry: Entry) -> int:
        """Put `entry` (the same id, refreshed) at position `found`; its order number."""
        order = self.orders[found]
        self.entries[found] = entry
        self._follow(order, entry, found)
        return order

    def _follow(self, order: int, entry: Entry, found: int | None) -> None:
        if self._lines is not None:
            if found is None:
                self._lines.append(_line(entry))
            else:
                self._lines[found] = _line(entry)
        key = normalize(entry.text)
        if self._keys is not None and self._keys.key_of.get(order) != key:
            if order in self._keys.key_of:
                self._keys.remove(order)
            self._keys.add(order, key)
        if self._index is not None:
            if self.sees(entry):
                self._index.add(order, entry, self.doc(entry))
            elif order in self._index:
                self._index.remove(order)

    def remove(self, found: int) -> None:
        order = self.orders.pop(found)
        del self.order_of[self.entries.pop(found).id]
        if self._lines is not None:
            del self._lines[found]
        if self._keys is not None:
            self._keys.remove(order)
        if self._index is not None and order in self._index:
            self._index.remove(order)

    def evict(self, limit: int, heap: list[Rank]) -> None:
        """Remove entries in eviction order until at most `limit` remain. `heap` holds the ranks
        of the entries (some stale: removed or refreshed since); built here when empty."""
        while len(self.entries) > limit:
            if not heap:
                heap.extend(map(_rank, self.entries, self.orders))
                heapq.heapify(heap)
            rank = heapq.heappop(heap)
            found = self.at(rank[2])
            if found is not None and _rank(self.entries[found], rank[2]) == rank:
                self.remove(found)

    @staticmethod
    def ranked(heap: list[Rank], entry: Entry, order: int) -> None:
        """Put a new or refreshed entry's rank on `heap`, when it was built."""
        if heap:
            heapq.heappush(heap, _rank(entry, order))
