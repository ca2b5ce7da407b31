"""Eviction (SPEC §3.4): beyond the cap, the least protected kind goes first, then the oldest."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from nanohermes.memory.constants import MAX_ENTRIES
from nanohermes.memory.entry import Entry
from nanohermes.memory.snapshot import Snapshot


def eviction_order(entries: Sequence[Entry], count: int) -> list[int]:
    """The positions of the `count` entries to evict first: highest eviction rank, then oldest ts,
    then earliest in the list. O(N log count)."""
    return heapq.nsmallest(
        count, range(len(entries)), key=lambda i: (-entries[i].kind.eviction_rank, entries[i].ts, i)
    )


def trim(entries: list[Entry], limit: int = MAX_ENTRIES) -> None:
    """Evict from `entries` (in place) until at most `limit` remain, in eviction order."""
    excess = len(entries) - limit
    if excess > 0:
        drop = set(eviction_order(entries, excess))
        entries[:] = [entry for i, entry in enumerate(entries) if i not in drop]


def trimmed(snap: Snapshot, limit: int) -> Snapshot:
    """`snap` with at most `limit` entries, the excess evicted in eviction order."""
    excess = len(snap.entries) - limit
    return snap if excess <= 0 else snap.without(set(eviction_order(snap.entries, excess)))
