"""Eviction (SPEC §3.4): beyond the cap, the least protected kind goes first, then the oldest, then
the earliest in the file.

`eviction_order` ranks a list in one pass. A store at its cap evicts on every write, so it keeps an
`EvictionQueue`: a heap of the entries by eviction order that follows each write's changes, so one
eviction costs O(log N), not a pass over every entry.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

from nanohermes.memory.constants import MAX_ENTRIES
from nanohermes.memory.docs import Doc
from nanohermes.memory.entry import Entry
from nanohermes.memory.snapshot import Snapshot

Rank = tuple[int, int, int]
"""(−eviction rank, ts, order in the file): the smallest is evicted first."""


def eviction_order(entries: Sequence[Entry], count: int) -> list[int]:
    """The positions of the `count` entries to evict first: highest eviction rank, then oldest ts,
    then earliest in the list. O(N log count)."""
    ranked = ((-entry.kind.eviction_rank, entry.ts, i) for i, entry in enumerate(entries))
    return [i for _, _, i in heapq.nsmallest(count, ranked)]


def trim(entries: list[Entry], limit: int = MAX_ENTRIES) -> None:
    """Evict from `entries` (in place) until at most `limit` remain, in eviction order."""
    excess = len(entries) - limit
    if excess > 0:
        drop = set(eviction_order(entries, excess))
        entries[:] = [entry for i, entry in enumerate(entries) if i not in drop]


def trimmed(snap: Snapshot, limit: int, queue: EvictionQueue | None = None) -> Snapshot:
    """`snap` with at most `limit` entries, the excess evicted in eviction order. `queue`: the
    entries of `snap`'s parent in eviction order (`snap` is a write's snapshot that added entries);
    without it every entry is ranked."""
    excess = len(snap.entries) - limit
    if excess <= 0:
        return snap
    if queue is None or snap.delta is None or snap.delta[0]:
        return snap.without(set(eviction_order(snap.entries, excess)))
    added = [(_rank(doc.entry, snap.order_of(doc.entry.id)), doc.entry.id) for doc in snap.delta[1]]
    chosen = heapq.nsmallest(excess, [*queue.first(excess), *added])
    drop = {snap.position(entry_id) for _, entry_id in chosen}
    if None in drop:  # the queue does not follow `snap`: rank every entry
        return snap.without(set(eviction_order(snap.entries, excess)))
    return snap.without({i for i in drop if i is not None})


def _rank(entry: Entry, order: int | None) -> Rank:
    return (-entry.kind.eviction_rank, entry.ts, -1 if order is None else order)


class EvictionQueue:
    """Entries by eviction order, kept by id. `first` does not change what it holds."""

    def __init__(self) -> None:
        self._rank: dict[str, Rank] = {}
        self._heap: list[tuple[Rank, str]] = []  # with stale items: an id's rank is `_rank`'s

    def __len__(self) -> int:
        return len(self._rank)

    def sync(self, snap: Snapshot) -> None:
        """Hold exactly the entries of `snap`."""
        self._rank = {e.id: _rank(e, order) for e, order in zip(snap.entries, snap.orders, strict=True)}
        self._heapify()

    def _heapify(self) -> None:
        self._heap = [(rank, entry_id) for entry_id, rank in self._rank.items()]
        heapq.heapify(self._heap)

    def apply(self, removed: Iterable[str], changed: Iterable[Doc], snap: Snapshot) -> None:
        """Follow a write to `snap`: remove the ids `removed`, add or re-rank the documents `changed`."""
        for entry_id in removed:
            self._rank.pop(entry_id, None)
        for doc in changed:
            entry_id = doc.entry.id
            rank = _rank(doc.entry, snap.order_of(entry_id))
            if self._rank.get(entry_id) != rank:
                self._rank[entry_id] = rank
                heapq.heappush(self._heap, (rank, entry_id))
        if len(self._heap) > 2 * len(self._rank) + 64:
            self._heapify()  # drop the stale items

    def first(self, count: int) -> list[tuple[Rank, str]]:
        """The `count` entries to evict first (fewer when it holds fewer), as (rank, id)."""
        heap, ranks = self._heap, self._rank
        found: list[tuple[Rank, str]] = []
        seen: set[str] = set()
        while heap and len(found) < count:
            item = heapq.heappop(heap)
            if ranks.get(item[1]) == item[0] and item[1] not in seen:
                seen.add(item[1])
                found.append(item)  # (stale items, of removed or re-ranked entries, are dropped)
        for item in found:
            heapq.heappush(heap, item)
        return found
