"""The first searches of a new process, answered from memory.cache (coldcache.py) and the bytes of
memory.json, without analysing and indexing every entry.

The answer is exactly the index's (SPEC §3.5: the same scores, summed in query-term order, and the
same order: score, newer ts, earlier in the file), or None when only a full load can tell (the file
is not laid out as this program writes it, a line needs the whole file, too much changed since the
cache was written); then the store loads as usual. Lines the cache does not know (another session
appended or changed them) are parsed and analysed here; cached lines gone from the file are skipped.
"""

from __future__ import annotations

import dataclasses
import heapq
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nanohermes.memory import coldcache
from nanohermes.memory.bm25 import Explanation, TermScore, idf
from nanohermes.memory.coldcache import GLOBAL, Packed, line_key
from nanohermes.memory.constants import CONTEXT_WEIGHT, K1
from nanohermes.memory.docs import make_doc
from nanohermes.memory.entry import Entry, entries_from_list
from nanohermes.memory.layout import split_document
from nanohermes.memory.scope import sees
from nanohermes.memory.topk import saturation

MIN_STALE = 64
"""Lines the cache may miss before a cold search gives up and a full load rewrites the cache
(besides an eighth of the file)."""
_BOOST = K1 + 1.0
Hit = tuple[float, int, int]  # (score, ts, -position in the file)


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
        packed = self._load()
        if packed is None:
            return None
        found = search(packed, raw, terms, k, project)
        self.fresh = found is not None and found.stale < MIN_STALE
        if found is not None:
            if len(self.explained) > 1024:
                self.explained.clear()
            key = tuple(terms)
            self.explained.update(((key, entry_id), why) for entry_id, why in found.explained.items())
        return found

    def covers(self, lines: Sequence[bytes]) -> bool:
        """Whether the cache on disk misses fewer than MIN_STALE of these entry lines (then a full
        load need not write it again)."""
        if self.fresh:
            return True
        packed = self._load()
        if packed is None:
            return False
        known = packed.slot_of
        missing = sum(1 for line in lines if line_key(line) not in known)
        return missing + max(0, len(known) - (len(lines) - missing)) < MIN_STALE

    def _load(self) -> Packed | None:
        try:
            st = os.stat(self.dir / coldcache.CACHE_FILE)
        except OSError:
            return None
        version = (st.st_ino, st.st_mtime_ns, st.st_size)
        if version != self._packed_version:
            self._packed = coldcache.read(self.dir)
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


@dataclass
class _Scope:
    """The entries one search sees: cached slots (by their position in the file) and new ones."""

    position: list[int]  # per cached slot: its line's position in the file, -1 when gone or unseen
    new: list[tuple[int, Entry, dict[str, float], float]]  # (position, entry, tf, length)
    count: int
    avgdl: float


def search(
    packed: Packed, raw: bytes, terms: Sequence[str], k: int, project: str | None
) -> ColdResult | None:
    """The top `k` for the distinct analysed query `terms` in a store seeing `project` (None: all),
    or None when a full load must answer."""
    split = split_document(raw)
    if split is None or k <= 0:
        return None
    lines = split[0]
    try:
        scope, stale = _scope(packed, lines, project)
        return _ranked(packed, lines, scope, terms, k, stale)
    except _Full:
        return None


def _scope(packed: Packed, lines: list[bytes], project: str | None) -> tuple[_Scope, int]:
    slot_of = packed.slot_of
    position = [-1] * len(packed.keys)
    unknown: list[int] = []
    for where, line in enumerate(lines):
        slot = slot_of.get(line_key(line))
        if slot is None:
            unknown.append(where)
        elif position[slot] >= 0:
            raise _Full  # the same line twice: its id repeats
        else:
            position[slot] = where
    stale = len(unknown) + position.count(-1)
    if stale > max(MIN_STALE, len(lines) // 8):
        raise _Full
    new = _new_entries(packed, lines, unknown, position)
    wanted = GLOBAL if project is None else _project_index(packed, project)
    count = main_total = context_total = 0
    for slot, (where, owner, main, context) in enumerate(
        zip(position, packed.project, packed.main_len, packed.context_len, strict=True)
    ):
        if where < 0:
            continue
        if project is None or owner in (GLOBAL, wanted):
            count += 1
            main_total += main
            context_total += context
        else:
            position[slot] = -1  # not in this scope
    shown = []
    for where, entry in new:
        if sees(project, entry):
            doc = make_doc(entry)
            shown.append((where, entry, doc.tf, doc.length))
            count += 1
            main_total += doc.main_len
            context_total += doc.context_len
    avgdl = (main_total + CONTEXT_WEIGHT * context_total) / count if count else 0.0
    return _Scope(position, shown, count, avgdl), stale


def _project_index(packed: Packed, project: str) -> int:
    try:
        return packed.projects.index(project)
    except ValueError:
        return -2  # no cached entry belongs to it


def _new_entries(
    packed: Packed, lines: list[bytes], unknown: list[int], position: list[int]
) -> list[tuple[int, Entry]]:
    """The entries of the lines the cache does not know (lines this version cannot use are left
    out, as a full load leaves them out)."""
    if not unknown:
        return []
    taken = {entry_id for entry_id, where in zip(packed.ids, position, strict=True) if where >= 0}
    found: list[tuple[int, Entry]] = []
    for where in unknown:
        entry = read_line(lines[where])
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
        item = json.loads(line)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _Full from None
    kept: list[str] = []
    found = entries_from_list([item], None, kept)
    if not found:
        if kept:
            return None
        raise _Full
    entry = found[0]
    if not isinstance(item, dict) or entry.id != item.get("id"):
        raise _Full  # its id was derived: that depends on the other entries
    return entry


def _ranked(
    packed: Packed, lines: list[bytes], scope: _Scope, terms: Sequence[str], k: int, stale: int
) -> ColdResult:
    """Score every entry holding a query term, exactly as the index would, and keep the best k."""
    sat_a, sat_b = saturation(scope.avgdl)  # as the index computes it (topk and merge alike)
    position, main, context = scope.position, packed.main_len, packed.context_len
    totals: dict[int, float] = {}
    get = totals.get
    held: list[tuple[str, float, dict[int, str | float]]] = []  # (term, weight, {position: tf})
    for term in terms:
        slots, tf_texts = packed.decode(term)
        found: dict[int, str | float] = {}
        lengths: dict[int, float] = {}
        for slot, tf_text in zip(slots, tf_texts, strict=True):
            where = position[slot]
            if where >= 0:
                found[where] = tf_text
                lengths[where] = main[slot] + CONTEXT_WEIGHT * context[slot]
        for where, _, tfs, length in scope.new:
            value = tfs.get(term)
            if value:
                found[where] = value
                lengths[where] = length
        if not found:
            continue
        weight = idf(scope.count, len(found)) * _BOOST
        held.append((term, weight, found))
        for where, text in found.items():
            tf = float(text)
            length = lengths[where]
            sat = sat_a + sat_b * length
            totals[where] = get(where, 0.0) + weight * tf / (tf + sat)
    timestamps = _timestamps(packed, scope)
    best = heapq.nlargest(k, ((score, timestamps[where], -where) for where, score in totals.items()))
    new = {where: (entry, length) for where, entry, _, length in scope.new}
    result: list[tuple[float, Entry]] = []
    explained: dict[str, Explanation] = {}
    for score, _, negated in best:
        if score <= 0.0:
            continue
        where = -negated
        if where in new:
            entry, length = new[where]
        else:
            slot = position.index(where)
            length = main[slot] + CONTEXT_WEIGHT * context[slot]
            found_entry = read_line(lines[where])
            if found_entry is None:
                raise _Full
            entry = found_entry
        result.append((score, entry))
        explained[entry.id] = _explanation(held, where, length, scope)
    return ColdResult(result, explained, stale)


def _timestamps(packed: Packed, scope: _Scope) -> dict[int, int]:
    found = {where: ts for where, ts in zip(scope.position, packed.ts, strict=True) if where >= 0}
    found.update((where, entry.ts) for where, entry, _, _ in scope.new)
    return found


def _explanation(
    held: list[tuple[str, float, dict[int, str | float]]],
    where: int,
    length: float,
    scope: _Scope,
) -> Explanation:
    """What `index.explain` says of the entry at `where` (its contributions as the merge adds them)."""
    sat_a, sat_b = saturation(scope.avgdl)
    sat = sat_a + sat_b * length
    parts: list[TermScore] = []
    for term, weight, found in held:
        tf = found.get(where)
        if tf is None:
            continue
        value = _tf_value(tf)
        df = len(found)
        parts.append(TermScore(term, value, df, idf(scope.count, df), weight * value / (value + sat)))
    score = sum(part.contribution for part in parts)
    return Explanation(score, tuple(parts), length, scope.avgdl, scope.count)


def _tf_value(tf: str | float) -> float:
    """The tf as the index holds it: an int count, or a float once context added half counts."""
    if not isinstance(tf, str):
        return tf
    return float(tf) if "." in tf or "e" in tf else int(tf)
