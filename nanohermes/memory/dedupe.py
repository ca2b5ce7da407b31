"""Which stored memories a new text may duplicate (SPEC §3.4), and the eviction order.

A text duplicates an entry when their normalized keys are equal, or one contains the other and the
shorter weighs at least DUPLICATE_MIN_WEIGHT, unless exactly one of the two negates
(`text.is_duplicate` decides). `Keys` finds the candidates without a Python loop over every stored
key, so `remember` stays cheap at 5,000 memories and an import of 5,000 stays about linear:
- equal keys: a dict;
- weighty stored keys inside the new key: filed by their first HEAD characters (shorter ones
  whole), looked up at each position of the new key;
- stored keys containing the new key: one `str.find` pass over the keys joined by NUL, plus the few
  added since the join (joined again every REJOIN additions).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Sequence

from nanohermes.memory.constants import DUPLICATE_MIN_WEIGHT
from nanohermes.memory.entry import Entry
from nanohermes.memory.text import weight

HEAD = 8
REJOIN = 256
_NUL = "\x00"


class Keys:
    """Every entry's duplicate key, by order number (the entry's place in the file)."""

    def __init__(self) -> None:
        self.key_of: dict[int, str] = {}
        self._whole: dict[str, set[int]] = {}  # key → orders (equal keys; short weighty keys)
        self._heads: dict[str, set[int]] = {}  # first HEAD characters → orders of longer keys
        self._short: dict[int, int] = {}  # length (< HEAD) → how many weighty keys have it
        self._joined = ""
        self._starts: list[int] = []
        self._orders: list[int] = []
        self._recent: list[int] = []  # orders added since the join

    def add(self, order: int, key: str) -> None:
        self.key_of[order] = key
        self._whole.setdefault(key, set()).add(order)
        if len(key) >= HEAD and weight(key) >= DUPLICATE_MIN_WEIGHT:
            self._heads.setdefault(key[:HEAD], set()).add(order)
        elif weight(key) >= DUPLICATE_MIN_WEIGHT:
            self._short[len(key)] = self._short.get(len(key), 0) + 1
        self._recent.append(order)
        if len(self._recent) > REJOIN:
            self._join()

    def remove(self, order: int) -> None:
        key = self.key_of.pop(order)
        self._whole[key].discard(order)
        if len(key) >= HEAD and weight(key) >= DUPLICATE_MIN_WEIGHT:
            self._heads[key[:HEAD]].discard(order)
        elif weight(key) >= DUPLICATE_MIN_WEIGHT:
            self._short[len(key)] -= 1
            if not self._short[len(key)]:
                del self._short[len(key)]

    def _join(self) -> None:
        self._orders = list(self.key_of)
        keys = [self.key_of[order] for order in self._orders]
        self._starts, position = [], 0
        for key in keys:
            self._starts.append(position)
            position += len(key) + 1
        self._joined, self._recent = _NUL.join(keys), []

    def candidates(self, key: str) -> set[int]:
        """The orders of every entry whose key equals `key`, contains it or lies inside it (a
        superset of the duplicates, with some that are not: `is_duplicate` decides)."""
        found = set(self._whole.get(key, ()))
        if weight(key) >= DUPLICATE_MIN_WEIGHT:
            found.update(self._containing(key))
        lengths = sorted(self._short)
        for position in range(len(key)):
            for order in self._heads.get(key[position : position + HEAD], ()):
                if key.startswith(self.key_of[order], position):
                    found.add(order)
            for length in lengths:
                found.update(self._whole.get(key[position : position + length], ()))
        return {order for order in found if order in self.key_of}

    def _containing(self, key: str) -> Iterable[int]:
        if _NUL in key:  # the joined text cannot tell where such a key is
            yield from (order for order, theirs in self.key_of.items() if key in theirs)
            return
        position = self._joined.find(key)
        while position >= 0:
            i = bisect.bisect_right(self._starts, position) - 1
            yield self._orders[i]
            if i + 1 >= len(self._starts):
                break
            position = self._joined.find(key, self._starts[i + 1])
        yield from (order for order in self._recent if key in self.key_of.get(order, ""))


def eviction_order(entries: Sequence[Entry], count: int) -> list[int]:
    """The positions of the `count` entries to evict first: highest eviction rank, then oldest ts,
    then earliest in the list. O(N log count)."""
    ranked = ((-entry.kind.eviction_rank, entry.ts, i) for i, entry in enumerate(entries))
    return [i for _, _, i in heapq.nsmallest(count, ranked)]


def trim(entries: list[Entry], limit: int) -> None:
    """Evict from `entries` (in place) until at most `limit` remain, in eviction order."""
    excess = len(entries) - limit
    if excess > 0:
        drop = set(eviction_order(entries, excess))
        entries[:] = [entry for i, entry in enumerate(entries) if i not in drop]
