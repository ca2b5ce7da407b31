"""The first searches of a new process, answered from memory.cache (coldcache.py) and the bytes of
memory.json, without analysing and indexing every entry.

The answer is exactly the index's (SPEC §3.5: the same scores, summed in query-term order, and the
same order: score, newer ts, earlier in the file), or None when only a full load can tell (the file
is not laid out as this program writes it, a line needs the whole file, too much changed since the
cache was written); then the store loads as usual.

When memory.json still begins with the bytes the cache was built from (CRC-32 of that prefix), the
cached entries are its first lines and only lines appended since are parsed. Otherwise every line is
matched to the cache by its key: lines it does not know (another session changed them) are parsed
and analysed here, cached lines gone from the file are skipped.
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import os
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from nanohermes.memory import coldcache
from nanohermes.memory.bitsets import saturation
from nanohermes.memory.bm25 import Explanation, TermScore, idf
from nanohermes.memory.coldcache import GLOBAL, META, Packed, line_key
from nanohermes.memory.constants import CONTEXT_WEIGHT, K1
from nanohermes.memory.derived import WholeFile, entry_of_line
from nanohermes.memory.docs import make_doc
from nanohermes.memory.entry import Entry
from nanohermes.memory.layout import ENTRIES_END, SEPARATOR, split_document
from nanohermes.memory.scope import sees

MIN_STALE = 64
"""Lines the cache may miss before a cold search gives up and a full load rewrites the cache
(besides an eighth of the file)."""
_BOOST = K1 + 1.0
_LIES = (ValueError, IndexError, KeyError, TypeError, OverflowError, RecursionError, UnicodeDecodeError)
"""What a cache that does not describe the file raises while it is read: then a full load answers."""


class ColdStart:
    """A store's cold path: its cache (read once per version of the cache file), the explanations
    of the hits it gave, and whether a full load should write the cache again."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self._packed: Packed | None = None
        self._packed_version: tuple[int, int, int] | None = None
        self.explained: dict[tuple[tuple[str, ...], str], Explanation] = {}
        self.fresh = False
        """The last cold search found the cache up to date (a full load need not write it)."""

    def search(self, raw: bytes, terms: Sequence[str], k: int, project: str | None) -> ColdResult | None:
        packed = self._load(coldcache.size_limit(len(raw)))
        if packed is None:
            return None
        found = search(packed, raw, terms, k, project)
        self.fresh = found is not None and found.appended and found.stale < MIN_STALE
        if found is not None:
            if len(self.explained) > 1024:
                self.explained.clear()
            key = tuple(terms)
            self.explained.update(((key, entry_id), why) for entry_id, why in found.explained.items())
        return found

    def covers(self, raw: bytes) -> bool:
        """Whether the cache on disk still serves memory.json (`raw`) on its fast path: the file
        begins with the bytes the cache was built from, and fewer than MIN_STALE lines were
        appended since. Else a full load writes it again: a file changed in place would have every
        new process match it to the cache line by line (at 50,000 memories, longer than json.loads)."""
        if self.fresh:
            return True
        packed = self._load(coldcache.size_limit(len(raw)))
        try:
            found = None if packed is None else _appended_lines(packed, raw)
        except _Full:
            return False
        return found is not None and len(found[1]) < MIN_STALE

    def _load(self, limit: int) -> Packed | None:
        try:
            st = os.stat(self.dir / coldcache.CACHE_FILE)
        except OSError:
            return None
        if st.st_size > limit:
            return None
        version = (st.st_ino, st.st_mtime_ns, st.st_size)
        if version != self._packed_version:
            self._packed = coldcache.read(self.dir, limit)
            self._packed_version = version
        return self._packed

    def forget(self) -> None:
        """A full load took over: the cold path's data is no longer needed."""
        self._packed = None
        self._packed_version = None
        self.explained.clear()


def with_words(explanation: Explanation, words: dict[str, list[str]]) -> Explanation:
    """`explanation` with each term's query words (as `Index.explain` gives them)."""
    parts = tuple(
        dataclasses.replace(part, words=tuple(words.get(part.term, ()))) for part in explanation.terms
    )
    return dataclasses.replace(explanation, terms=parts)


class _Full(Exception):
    """Only a full load of the file can answer."""


@dataclass
class ColdResult:
    hits: list[tuple[float, Entry]]
    explained: dict[str, Explanation]
    """Each hit's explanation by entry id (without the query's words)."""
    stale: int
    """Entry lines of the file the cache did not know plus cached lines gone from it."""
    appended: bool
    """The file begins with the bytes the cache was built from (the fast path answered)."""


@dataclass
class _View:
    """The entries one search sees: cached slots and entries the cache does not know."""

    position: list[int] | None
    """Per cached slot: its line's position in the file, -1 when gone or out of scope; None when
    the file begins with exactly the cached lines (slot = position)."""
    allowed: frozenset[int] | None  # projects seen (None: every entry)
    new: list[tuple[int, Entry, dict[str, float], float]]  # (position, entry, tf, length)
    line_at: Callable[[int], bytes]  # a cached line's bytes by its slot
    stale: int
    owners: Sequence[int] = ()  # each slot's project (for a scoped view of an unchanged prefix)
    count: int = 0
    avgdl: float = 0.0
    new_length: dict[int, float] = dataclasses.field(default_factory=dict)  # by position


def search(
    packed: Packed, raw: bytes, terms: Sequence[str], k: int, project: str | None
) -> ColdResult | None:
    """The top `k` for the distinct analysed query `terms` in a store seeing `project` (None: all),
    or None when a full load must answer."""
    if k <= 0:
        return None
    try:
        view = _appended_view(packed, raw, project) or _line_view(packed, raw, project)
        return _ranked(packed, view, terms, k)
    except (_Full, *_LIES):
        return None


def _appended_view(packed: Packed, raw: bytes, project: str | None) -> _View | None:
    """The view when memory.json begins with the bytes the cache was built from (lines may have
    been appended since), else None."""
    appended = _appended_lines(packed, raw)
    if appended is None:
        return None
    size, extra = appended
    meta, last = packed.meta, packed.count - 1

    def line_at(slot: int) -> bytes:
        stop = size if slot == last else meta[(slot + 1) * META + 4] - len(SEPARATOR)
        return raw[meta[slot * META + 4] : stop]

    found = _new_entries(packed, [(packed.count + i, line) for i, line in enumerate(extra)], None)
    view = _View(None, _allowed(packed, project), [], line_at, len(extra), packed.owners)
    _count_cached(packed, view)
    _add_new(view, found, project)
    return view


def _appended_lines(packed: Packed, raw: bytes) -> tuple[int, list[bytes]] | None:
    """Where the cached lines end in memory.json and the lines appended after them, when the file
    begins with the bytes the cache was built from; else None. _Full when too many were appended."""
    prefix = packed.prefix
    if prefix is None or packed.count == 0 or len(raw) < prefix[0]:
        return None
    size = prefix[0]
    end = size if raw.startswith(ENTRIES_END, size) else raw.find(ENTRIES_END, size)
    if end < 0 or zlib.crc32(memoryview(raw)[:size]) != prefix[1]:
        return None
    extra: list[bytes] = []
    if end > size:
        if not raw.startswith(SEPARATOR, size):
            return None
        extra = raw[size + len(SEPARATOR) : end].split(SEPARATOR)
        if len(extra) > max(MIN_STALE, packed.count // 8):
            raise _Full
    return size, extra


def _line_view(packed: Packed, raw: bytes, project: str | None) -> _View:
    """The view of a file matched to the cache line by line."""
    split = split_document(raw)
    if split is None:
        raise _Full
    lines = split[0]
    slot_of = packed.slot_of()
    position = [-1] * packed.count
    unknown: list[tuple[int, bytes]] = []
    for where, line in enumerate(lines):
        slot = slot_of.get(line_key(line))
        if slot is None:
            unknown.append((where, line))
        elif position[slot] >= 0:
            raise _Full  # the same line twice: its id repeats
        else:
            position[slot] = where
    stale = len(unknown) + position.count(-1)
    if stale > max(MIN_STALE, len(lines) // 8):
        raise _Full
    found = _new_entries(packed, unknown, position)
    view = _View(position, _allowed(packed, project), [], lambda slot: lines[position[slot]], stale)
    _count_cached(packed, view)
    _add_new(view, found, project)
    return view


def _allowed(packed: Packed, project: str | None) -> frozenset[int] | None:
    if project is None:
        return None
    try:
        return frozenset((GLOBAL, packed.projects.index(project)))
    except ValueError:
        return frozenset((GLOBAL,))  # no cached entry belongs to it


def _count_cached(packed: Packed, view: _View) -> None:
    """The cached entries' count and length totals in this view's scope."""
    allowed, position, meta = view.allowed, view.position, packed.meta
    if position is None:
        rows = [row for i, row in enumerate(packed.totals) if allowed is None or i - 1 in allowed]
        count, main, context = (sum(row[i] for row in rows) for i in range(3))
    else:
        count = main = context = 0
        for slot, where in enumerate(position):
            if where < 0:
                continue
            base = slot * META
            if allowed is None or meta[base + 3] in allowed:
                count += 1
                main += meta[base]
                context += meta[base + 1]
            else:
                position[slot] = -1  # not in this scope
    view.count = count
    view.avgdl = main + CONTEXT_WEIGHT * context  # (divided once the new entries are in)


def _add_new(view: _View, found: list[tuple[int, Entry]], project: str | None) -> None:
    total = view.avgdl
    for where, entry in found:
        if sees(project, entry):
            doc = make_doc(entry)
            view.new.append((where, entry, doc.tf, doc.length))
            view.new_length[where] = doc.length
            view.count += 1
            total += doc.main_len + CONTEXT_WEIGHT * doc.context_len
    view.avgdl = total / view.count if view.count else 0.0


def _new_entries(
    packed: Packed, unknown: list[tuple[int, bytes]], position: list[int] | None
) -> list[tuple[int, Entry]]:
    """The entries of the lines the cache does not know (lines this version cannot use are left
    out, as a full load leaves them out)."""
    if not unknown:
        return []
    ids = packed.ids()
    taken = (
        set(ids) if position is None else {i for i, where in zip(ids, position, strict=True) if where >= 0}
    )
    found: list[tuple[int, Entry]] = []
    for where, line in unknown:
        entry = read_line(line)
        if entry is None:
            continue
        if entry.id in taken:
            raise _Full
        taken.add(entry.id)
        found.append((where, entry))
    return found


def read_line(line: bytes) -> Entry | None:
    """The entry of one line, None for a line this version keeps but cannot use; _Full when only
    the whole file decides (as the store's line-by-line read decides)."""
    try:
        return entry_of_line(line, [])
    except WholeFile:
        raise _Full from None


Held = list[tuple[str, float, list[int], list[bytes], dict[int, float]]]
"""Per query term found: (term, idf · (K1 + 1), its cached slots in scope (ascending), their tfs
as written, {position: tf} of the new entries holding it)."""


def _ranked(packed: Packed, view: _View, terms: Sequence[str], k: int) -> ColdResult:
    """Score every entry holding a query term, exactly as the index would, and keep the best k.
    Totals are keyed by slot for cached entries and by -1 - position for new ones."""
    sat_a, sat_b = saturation(view.avgdl)  # as the index computes it (topk and merge alike)
    meta = packed.meta
    totals: dict[int, float] = {}
    get = totals.get
    held: Held = []
    for term in terms:
        slots, tfs = _in_scope(packed, view, *packed.decode(term))
        new = {where: value for where, _, tf_of, _ in view.new if (value := tf_of.get(term))}
        if not slots and not new:
            continue
        weight = idf(view.count, len(slots) + len(new)) * _BOOST
        held.append((term, weight, slots, tfs, new))
        for slot, tf in zip(slots, map(float, tfs), strict=True):
            length = meta[slot * META] + CONTEXT_WEIGHT * meta[slot * META + 1]
            sat = sat_a + sat_b * length
            totals[slot] = get(slot, 0.0) + weight * tf / (tf + sat)
        for where, value in new.items():
            length = view.new_length[where]
            sat = sat_a + sat_b * length
            totals[-1 - where] = get(-1 - where, 0.0) + weight * value / (value + sat)
    return _best(packed, view, totals, held, k)


def _in_scope(
    packed: Packed, view: _View, slots: list[int], tfs: list[bytes]
) -> tuple[list[int], list[bytes]]:
    """The postings of the cached entries this view sees (all of them for an unscoped view of a
    file that begins as cached)."""
    position, allowed = view.position, view.allowed
    if position is None and allowed is None:
        return slots, tfs
    if position is None:
        owners = view.owners
        keep = [i for i, slot in enumerate(slots) if owners[slot] in allowed]  # type: ignore[operator]
    else:
        keep = [i for i, slot in enumerate(slots) if position[slot] >= 0]  # scope applied to position
    return [slots[i] for i in keep], [tfs[i] for i in keep]


def _best(packed: Packed, view: _View, totals: dict[int, float], held: Held, k: int) -> ColdResult:
    """The k best (score, newer ts, earlier in the file) with their entries and explanations."""
    meta, position = packed.meta, view.position
    new = {where: entry for where, entry, _, _ in view.new}

    def order(item: tuple[int, float]) -> tuple[float, int, int]:
        key, score = item
        if key < 0:
            return score, new[-1 - key].ts, key + 1  # -position, as for the cached ones
        where = key if position is None else position[key]
        return score, meta[key * META + 2], -where

    result: list[tuple[float, Entry]] = []
    explained: dict[str, Explanation] = {}
    scores = heapq.nlargest(k, totals.values())
    floor = scores[-1] if scores else 0.0  # only these can be among the k best, ties included
    contenders = [item for item in totals.items() if item[1] >= floor]
    for key, score in heapq.nlargest(k, contenders, key=order):
        if score <= 0.0:
            continue
        if key < 0:
            entry: Entry | None = new[-1 - key]
            length = view.new_length[-1 - key]
        else:
            entry = read_line(view.line_at(key))
            length = meta[key * META] + CONTEXT_WEIGHT * meta[key * META + 1]
        if entry is None:
            raise _Full
        result.append((score, entry))
        explained[entry.id] = _explanation(held, key, length, view)
    return ColdResult(result, explained, view.stale, view.position is None)


def _explanation(held: Held, key: int, length: float, view: _View) -> Explanation:
    """What `index.explain` says of one entry; `key`: its slot, or -1 - its position for a new one."""
    sat_a, sat_b = saturation(view.avgdl)
    sat = sat_a + sat_b * length
    parts: list[TermScore] = []
    for term, weight, slots, tfs, new in held:
        if key < 0:
            found = new.get(-1 - key)
            if found is None:
                continue
            value: float = found
        else:
            at = bisect.bisect_left(slots, key)
            if at == len(slots) or slots[at] != key:
                continue
            value = _tf_value(tfs[at])
        df = len(slots) + len(new)
        parts.append(TermScore(term, value, df, idf(view.count, df), weight * value / (value + sat)))
    score = sum(part.contribution for part in parts)
    return Explanation(score, tuple(parts), length, view.avgdl, view.count)


def _tf_value(tf: bytes) -> float:
    """The tf as the index holds it: an int count, or a float once context added half counts."""
    return float(tf) if b"." in tf or b"e" in tf else int(tf)
