"""One version of memory.json as a store holds it, with what it derives from the entries (made when
first needed, then changed in place). Every entry has an order number, increasing in file order and
never reused, by which the index and the duplicate keys name it.

`Keys` finds duplicate candidates (SPEC §3.4) without a Python loop over every key, so an import of
5,000 stays about linear: equal keys by a dict; weighty stored keys inside the new key by their first
HEAD characters; stored keys holding it by one `str.find` over the keys joined by NUL."""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import itertools
from collections.abc import Callable

from nanohermes.memory.constants import DUPLICATE_MIN_WEIGHT
from nanohermes.memory.entry import Entry, entry_from, json_text
from nanohermes.memory.index import Doc, Index
from nanohermes.memory.memfile import FORMAT_VERSION, Identity, Parsed, dump
from nanohermes.memory.text import is_duplicate, normalize, weight

HEAD = 8
REJOIN = 256


class Keys:
    """Every entry's duplicate key by order number, filed to find the candidates."""

    def __init__(self) -> None:
        self.key_of: dict[int, str] = {}
        self._equal: dict[str, set[int]] = {}
        self._heads: dict[str, set[int]] = {}  # a weighty key's first HEAD characters → orders
        self._sizes = {HEAD}  # the lengths of those heads (a shorter key is its own head)
        self._joined, self._starts, self._orders = "", [0], [0]  # the keys joined, where each starts
        self._recent: list[int] = []  # orders added since the join

    def add(self, order: int, key: str) -> None:
        if order in self.key_of:
            self.remove(order)
        self.key_of[order] = key
        self._equal.setdefault(key, set()).add(order)
        if weight(key) >= DUPLICATE_MIN_WEIGHT:
            self._heads.setdefault(key[:HEAD], set()).add(order)
            self._sizes.add(min(len(key), HEAD))
        self._recent.append(order)
        if len(self._recent) > REJOIN:
            self._orders, self._recent = list(self.key_of), []
            self._starts = [0, *itertools.accumulate(len(theirs) + 1 for theirs in self.key_of.values())]
            self._joined = "\0".join(self.key_of.values())

    def remove(self, order: int) -> None:
        key = self.key_of.pop(order)
        self._equal[key].discard(order)
        self._heads.get(key[:HEAD], set()).discard(order)

    def candidates(self, key: str) -> set[int]:
        """The orders of the entries whose key may equal, contain or lie inside `key`."""
        found = set(self._equal.get(key, ()))
        if weight(key) >= DUPLICATE_MIN_WEIGHT:  # (no new text holds a NUL: `prepare` refuses controls)
            position = self._joined.find(key)
            while position >= 0:
                i = bisect.bisect_right(self._starts, position) - 1
                found.add(self._orders[i])
                position = self._joined.find(key, self._starts[i + 1])
            found.update(order for order in self._recent if key in self.key_of.get(order, ""))
        for position in range(len(key)):
            for size in self._sizes:
                for order in self._heads.get(key[position : position + size], ()):
                    if key.startswith(self.key_of[order], position):
                        found.add(order)
        return {order for order in found if order in self.key_of}


class State:
    """`entries`: {order: entry} in file order; `kept` the items this version cannot use (written
    back), `top` the unknown top-level fields. `adopt` takes each entry read, changed, or refuses it
    with a reason (in `skipped`). `team`: the team memory's entries, searched with these (orders
    below 0); `problem`: why the file must not be written."""

    def __init__(
        self,
        sees: Callable[[Entry], bool],
        doc: Callable[[Entry], Doc],
        parsed: Parsed | None = None,
        identity: Identity | None = None,
        adopt: Callable[[Entry], Entry | str] = lambda entry: entry,
    ) -> None:
        self.sees, self.doc, self.identity = sees, doc, identity
        self.team: list[Entry] = []
        self.team_order: dict[str, int] = {}
        self.team_identity: Identity | None = None
        self.problem = ""
        self.skipped: list[str] = []
        parsed = parsed or Parsed([], FORMAT_VERSION, [])
        self.version, self.top = parsed.version, parsed.top
        self.entries: dict[int, Entry] = {}
        self.kept: list[str] = []
        self.order_of: dict[str, int] = {}
        for item in parsed.items:
            entry = entry_from(item, self.order_of)
            adopted = adopt(entry) if entry is not None else None
            if isinstance(adopted, str):
                self.skipped.append(adopted)
            if not isinstance(adopted, Entry):
                self.kept.append(json_text(item))
            else:
                self.order_of[adopted.id] = len(self.entries)
                self.entries[len(self.entries)] = adopted
        self._next = len(self.entries)
        self._lines: dict[int, bytes] | None = None
        self._keys: Keys | None = None
        self._index: Index | None = None

    def get(self, entry_id: str) -> Entry | None:
        order = self.order_of.get(entry_id)
        return None if order is None else self.entries[order]

    def dump(self) -> list[bytes]:
        if self._lines is None:
            self._lines = {order: _line(entry) for order, entry in self.entries.items()}
        return dump(list(self._lines.values()), self.kept, self.top)

    def keys(self) -> Keys:
        if self._keys is None:
            self._keys = Keys()
            for order, entry in self.entries.items():
                if not entry.superseded_by:
                    self._keys.add(order, normalize(entry.text))
        return self._keys

    def index(self) -> Index:
        if self._index is None:
            self._index = Index()
            pairs = [*self.entries.items(), *enumerate(self.team, start=-len(self.team))]
            for order, entry in pairs:
                if self.sees(entry):
                    self._index.add(order, entry, self.doc(entry))
        return self._index

    def add_uses(self, used: dict[str, tuple[int, int]]) -> None:
        """Count the uses noted since the last write: id → (uses, when last)."""
        for entry_id, (uses, when) in used.items():
            order = self.order_of.get(entry_id)
            if order is not None:
                old = self.entries[order]
                self.put(
                    dataclasses.replace(old, used_ts=max(old.used_ts, when), uses=old.uses + uses), order
                )

    def set_team(self, entries: list[Entry], identity: Identity | None) -> None:
        """Search `entries` (the team memory's, of file version `identity`) with these."""
        self.team, self.team_identity, self._index = entries, identity, None
        self.team_order = {entry.id: order for order, entry in enumerate(entries, -len(entries))}

    def duplicate(self, text: str, skip: int | None = None) -> int | None:
        """The order of the entry `text` duplicates, those the store sees first; never `skip`."""
        candidates = sorted(self.keys().candidates(normalize(text)))
        found = [o for o in candidates if o != skip and is_duplicate(text, self.entries[o].text)]
        return next((o for o in found if self.sees(self.entries[o])), found[0] if found else None)

    def put(self, entry: Entry, order: int | None = None) -> int:
        """Append `entry`, or put it (the same id, refreshed) in place of `order`; its order."""
        if order is None:
            order, self._next = self._next, self._next + 1
            self.order_of[entry.id] = order
        self.entries[order] = entry
        if self._lines is not None:
            self._lines[order] = _line(entry)
        key = None if entry.superseded_by else normalize(entry.text)  # a replaced entry is no duplicate
        if self._keys is not None and self._keys.key_of.get(order) != key:
            if key is None:
                self._keys.remove(order)
            else:
                self._keys.add(order, key)
        if self._index is not None and self.sees(entry):
            self._index.add(order, entry, self.doc(entry))
        elif self._index is not None and order in self._index.docs:  # replaced: no longer searched
            self._index.remove(order)
        return order

    def remove(self, order: int) -> None:
        del self.order_of[self.entries.pop(order).id]
        if self._lines is not None:
            del self._lines[order]
        if self._keys is not None and order in self._keys.key_of:
            self._keys.remove(order)
        if self._index is not None and order in self._index.docs:
            self._index.remove(order)

    def evict(self, limit: int) -> None:
        """Remove the entries first in eviction order until at most `limit` remain: replaced ones, then
        the least protected kind, least recently used (a never-used one from when it was saved)."""
        ranked = (
            (not entry.superseded_by, -entry.kind.eviction_rank, max(entry.used_ts, entry.ts), order)
            for order, entry in self.entries.items()
        )
        for *_, order in heapq.nsmallest(len(self.entries) - limit, ranked):
            self.remove(order)


def _line(entry: Entry) -> bytes:
    return json_text(entry.to_dict()).encode()
