"""Duplicate detection (SPEC §3.4): which stored memory a new text duplicates, and the merge.

A text duplicates an entry when their normalized keys are equal, or one contains the other and the
shorter weighs at least DUPLICATE_MIN_WEIGHT, unless exactly one of the two negates
(`text.is_duplicate`). `KeyIndex` finds the candidates without comparing the new key with every
stored one: equal keys through a dict; stored keys that contain the new key by one `str.find` pass
over the keys joined in chunks, shelved by length and script so that only the keys at least as long
as the new one are searched (only the non-ASCII ones for a non-ASCII key); stored keys inside the
new key by their head (their first HEAD, 2·HEAD, 4·HEAD… characters, the most that fit, so that
keys sharing a long opening do not pile up under one head; a key shorter than HEAD whole), looked up
at each position of the new key. It is kept by entry id and follows
each write's changes, so `remember` does not touch the other entries' keys.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
from collections.abc import Iterable, Sequence

from nanohermes.memory.constants import DUPLICATE_MIN_WEIGHT
from nanohermes.memory.docs import Doc
from nanohermes.memory.entry import Entry
from nanohermes.memory.kinds import Kind
from nanohermes.memory.scope import sees
from nanohermes.memory.text import is_duplicate, weight
from nanohermes.memory.writing import prepare_keys

HEAD = 16
"""Stored keys at least this long are found by their head (`_head`); shorter ones whole."""
MAX_HEAD = 16 * HEAD
CHUNK_CHARS = 1 << 16
SHELF_CHARS = 16
"""Keys are shelved by length in steps of SHELF_CHARS (and by script, ASCII or not)."""
_SEPARATOR = "\x00"

Shelf = tuple[bool, int]
"""(ASCII only, length // SHELF_CHARS)"""


def _shelf(key: str) -> Shelf:
    return key.isascii(), len(key) // SHELF_CHARS


def _head(key: str) -> str:
    """The opening of `key` (at least HEAD characters) it is found by: HEAD · 2**k characters, the
    most that fit, at most MAX_HEAD."""
    return key[: min(MAX_HEAD, HEAD << ((len(key) // HEAD).bit_length() - 1))]


def _weighty(key: str) -> bool:
    """Whether `key` may be the shorter side of a containment duplicate."""
    return len(key) >= DUPLICATE_MIN_WEIGHT or weight(key) >= DUPLICATE_MIN_WEIGHT


def _put(table: dict[str, list[str]], name: str, entry_id: str) -> None:
    found = table.get(name)
    if found is None:
        table[name] = [entry_id]
    else:
        found.append(entry_id)


def _count_down(counts: dict[int, int], size: int) -> None:
    left = counts[size] - 1
    if left:
        counts[size] = left
    else:
        del counts[size]


def _take(table: dict[str, list[str]], name: str, entry_id: str) -> None:
    found = table[name]
    found.remove(entry_id)
    if not found:
        del table[name]


@dataclasses.dataclass
class _Chunk:
    """Keys joined by a separator, with where each starts and whose it is."""

    text: str = ""
    starts: list[int] = dataclasses.field(default_factory=list)
    ids: list[str] = dataclasses.field(default_factory=list)

    @classmethod
    def of(cls, ids: list[str], key_of: dict[str, str]) -> _Chunk:
        keys = [key_of[i] for i in ids]
        starts = list(itertools.accumulate((len(key) + 1 for key in keys[:-1]), initial=0))
        return cls(_SEPARATOR.join(keys), starts, ids)

    def add(self, entry_id: str, key: str) -> None:
        self.starts.append(len(self.text) + (1 if self.ids else 0))
        self.text = f"{self.text}{_SEPARATOR}{key}" if self.ids else key
        self.ids.append(entry_id)

    def holding(self, key: str) -> Iterable[str]:
        """The ids whose key (as joined here) contains `key`, each once."""
        text, starts, ids = self.text, self.starts, self.ids
        position = text.find(key)
        while position >= 0:
            i = bisect.bisect_right(starts, position) - 1
            yield ids[i]
            if i + 1 >= len(starts):
                return
            position = text.find(key, starts[i + 1])


class KeyIndex:
    """Every entry's duplicate key by id, indexed to find duplicate candidates (module docstring)."""

    def __init__(self, docs: Iterable[Doc] = ()) -> None:
        self.key_of: dict[str, str] = {}
        self._equal: dict[str, list[str]] = {}
        self._heads: dict[str, dict[str, list[str]]] = {}  # first HEAD characters → head → ids
        self._short: dict[int, int] = {}  # length (< HEAD) → how many weighty keys have it
        self._head_sizes: dict[int, int] = {}  # head length → how many keys have a head that long
        self._shelves: dict[Shelf, list[_Chunk]] = {}
        self._stale = 0  # keys in the chunks whose entry was removed or changed
        for doc in docs:
            self._enter(doc.entry.id, doc.key)
        self._rechunk()

    def __len__(self) -> int:
        return len(self.key_of)

    def add(self, entry_id: str, key: str) -> None:
        self._enter(entry_id, key)
        chunks = self._shelves.setdefault(_shelf(key), [])
        if not chunks or len(chunks[-1].text) >= CHUNK_CHARS:
            chunks.append(_Chunk())
        chunks[-1].add(entry_id, key)

    def _enter(self, entry_id: str, key: str) -> None:
        """Everything but the chunks."""
        self.key_of[entry_id] = key
        _put(self._equal, key, entry_id)
        if len(key) >= HEAD:
            head = _head(key)
            _put(self._heads.setdefault(head[:HEAD], {}), head, entry_id)
            self._head_sizes[len(head)] = self._head_sizes.get(len(head), 0) + 1
        elif _weighty(key):
            self._short[len(key)] = self._short.get(len(key), 0) + 1

    def remove(self, entry_id: str) -> None:
        key = self.key_of.pop(entry_id)
        _take(self._equal, key, entry_id)
        if len(key) >= HEAD:
            head = _head(key)
            heads = self._heads[head[:HEAD]]
            _take(heads, head, entry_id)
            if not heads:
                del self._heads[head[:HEAD]]
            _count_down(self._head_sizes, len(head))
        elif _weighty(key):
            _count_down(self._short, len(key))
        self._stale += 1
        if self._stale > len(self.key_of) + 64:
            self._rechunk()

    def apply(self, removed: Iterable[str], changed: Iterable[Doc]) -> None:
        """Follow a write: remove the ids `removed`, then add or replace the documents `changed`."""
        for entry_id in removed:
            self.remove(entry_id)
        for doc in changed:
            if doc.entry.id in self.key_of:
                if self.key_of[doc.entry.id] == doc.key:
                    continue
                self.remove(doc.entry.id)
            self.add(doc.entry.id, doc.key)

    def sync(self, docs: Sequence[Doc]) -> None:
        """Hold exactly the keys of `docs` (another program changed the file), changing only those
        that differ."""
        key_of = self.key_of
        changed = [doc for doc in docs if key_of.get(doc.entry.id) != doc.key]
        if 2 * len(changed) > len(docs):
            self.__init__(docs)  # type: ignore[misc]
            return
        wanted = {doc.entry.id for doc in docs}
        self.apply([i for i in key_of if i not in wanted], changed)

    def _rechunk(self) -> None:
        """Join the live keys again, shelf by shelf, in chunks of about CHUNK_CHARS characters."""
        self._stale = 0
        shelved: dict[Shelf, list[str]] = {}
        for entry_id, key in self.key_of.items():
            shelved.setdefault(_shelf(key), []).append(entry_id)
        self._shelves = {}
        for shelf, ids in shelved.items():
            chunks = self._shelves[shelf] = []
            start, size = 0, 0
            for end, entry_id in enumerate(ids, start=1):
                size += len(self.key_of[entry_id]) + 1
                if size >= CHUNK_CHARS:
                    chunks.append(_Chunk.of(ids[start:end], self.key_of))
                    start, size = end, 0
            if start < len(ids):
                chunks.append(_Chunk.of(ids[start:], self.key_of))

    def _holding(self, key: str) -> Iterable[str]:
        """Ids of stored keys that contain `key` (a few more, whose entries are gone or changed):
        only the shelves of keys at least as long, of its script or wider, are searched."""
        ascii_only, length = _shelf(key)
        for (shelf_ascii, shelf_length), chunks in self._shelves.items():
            if shelf_length >= length and (ascii_only or not shelf_ascii):
                for chunk in chunks:
                    yield from chunk.holding(key)

    def candidates(self, key: str) -> set[str]:
        """The ids of every entry whose key equals `key`, contains it or lies inside it (a superset
        of the duplicates: `is_duplicate` decides)."""
        found = set(self._equal.get(key, ()))
        key_of = self.key_of
        if _SEPARATOR in key:  # the chunks cannot tell where such a key occurs
            found.update(i for i, theirs in key_of.items() if key in theirs)
        elif _weighty(key):  # stored keys that contain the new one
            found.update(i for i in self._holding(key) if key in key_of.get(i, ""))
        found.update(self._inside(key))
        return found

    def _at(self, key: str, position: int, heads: dict[str, list[str]], sizes: list[int]) -> Iterable[str]:
        """Ids of the stored keys under `heads` (by head) that occur in `key` at `position`."""
        key_of = self.key_of
        for size in sizes:
            if position + size > len(key):
                break
            for entry_id in heads.get(key[position : position + size], ()):
                if key.startswith(key_of[entry_id], position):
                    yield entry_id

    def _inside(self, key: str) -> Iterable[str]:
        """Ids of stored keys (weighty or equal) that occur in `key`."""
        heads, equal = self._heads, self._equal
        lengths = sorted(self._short)
        sizes = sorted(self._head_sizes)
        for position in range(len(key)):
            found = heads.get(key[position : position + HEAD])
            if found is not None:  # a stored key starts with the HEAD characters at `position`
                yield from self._at(key, position, found, sizes)
            for length in lengths:
                if position + length > len(key):
                    break
                yield from equal.get(key[position : position + length], ())


def first_duplicate(
    text: str,
    key: str,
    positions: Iterable[int],
    docs: Sequence[Doc],
    project: str | None = None,
) -> int | None:
    """The first of `positions` (candidates, any order) whose entry `text` (normalized: `key`)
    duplicates: the first one a store opened for `project` sees, else the first of another project."""
    elsewhere: int | None = None
    for i in sorted(positions):
        entry = docs[i].entry
        if is_duplicate(text, entry.text, key, docs[i].key):
            if sees(project, entry):
                return i
            if elsewhere is None:
                elsewhere = i
    return elsewhere


def merge(
    old: Entry,
    kind: Kind,
    text: str,
    source: str,
    now: int,
    keys: tuple[str, ...],
    context: str,
    secrets: tuple[str, ...],
) -> Entry:
    """A duplicate refreshes ts and source, keeps the longer text, the more protected kind, both
    texts' keys, and the newer context (the older one when the new memory has none)."""
    better_kind = kind if kind.eviction_rank < old.kind.eviction_rank else old.kind
    longer = text if len(text) > len(old.text) else old.text
    return dataclasses.replace(
        old,
        kind=better_kind,
        text=longer,
        source=source,
        ts=now,
        keys=prepare_keys(old.keys + keys, secrets),
        context=context or old.context,
    )  # the old entry's project and unknown fields stay
