"""Exact BM25F top k without touching every posting (the scores of index.py, unchanged).

The index keeps, updated on every add and remove (no per-query building):
- per frequent term (more than RARE_DF entries hold it) two bitsets over slots: entries where its
  weighted tf is exactly 1, and the others (with `tf_max`, an upper bound of their tf);
- per length bucket (weighted lengths within a factor BUCKET_RATIO) a bitset of its slots.

A query first scores every entry holding one of its rare terms (few by definition), exactly. The
remaining entries hold only frequent terms: a depth-first walk decides term by term "tf 1", "other
tf" or "lacks it" by AND-ing bitsets, so each branch is the set of entries with one pattern. A
contribution is at most `idf · tf·(K1+1) / (tf + K(len))` and K grows with length, so a branch is
bounded by its terms at the shortest length; a branch whose bound is below the current k-th score
is dropped unopened. A complete pattern is scanned bucket by bucket, shortest first, until the
bound at the bucket's shortest length falls below the k-th score. Every returned score is the full
sum, added in query-term order, as the exhaustive merge adds it.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from nanohermes.memory.constants import K1, B

if TYPE_CHECKING:
    from nanohermes.memory.docs import Doc
    from nanohermes.memory.index import Index

RARE_DF = 32
"""A term held by at most this many entries is scored entry by entry, without bitsets."""
SCAN_ALL = 8
"""A pattern of at most this many entries is scored whole, without walking the length buckets."""
BUCKET_RATIO = 1.15
_LOG_RATIO = math.log(BUCKET_RATIO)
_SAFETY = 1.0 + 1e-9  # prune only when the bound is below the k-th score by more than rounding
_BOOST = K1 + 1.0

Heap = list[tuple[float, int, int]]  # (score, ts, -slot): the worst on top
Others = tuple[tuple[float, float, str], ...]  # held terms with a tf other than 1: (weight, tf_max, term)


def bucket_of(length: float) -> int:
    return int(math.log(length + 1.0) / _LOG_RATIO)


def bucket_floor(bucket: int) -> float:
    """The shortest weighted length bucket `bucket` can hold."""
    return max(math.exp(bucket * _LOG_RATIO) - 1.0, 0.0)


class _Query:
    """One query's exact top k over an index (see the module docstring)."""

    def __init__(self, index: Index, weights: list[tuple[str, float]], k: int) -> None:
        self.index = index
        self.weights = weights  # (term, idf · (K1 + 1)) in query order
        self.k = k
        self.heap: Heap = []
        self.theta = -1.0
        avgdl = max(index.avgdl, 1.0)
        self.sat_a = K1 * (1.0 - B)
        self.sat_b = K1 * B / avgdl

    def score(self, doc: Doc, terms: Sequence[tuple[str, float]]) -> float:
        sat = self.sat_a + self.sat_b * doc.length
        tfs = doc.tf
        total = 0.0
        for term, weight in terms:
            tf = tfs.get(term)
            if tf:
                total += weight * tf / (tf + sat)
        return total

    def offer(self, slot: int, score: float, doc: Doc) -> None:
        key = (score, doc.entry.ts, -slot)
        heap = self.heap
        if len(heap) < self.k:
            heapq.heappush(heap, key)
        elif key > heap[0]:
            heapq.heapreplace(heap, key)
        else:
            return
        if len(heap) == self.k:
            self.theta = heap[0][0]

    def result(self) -> list[tuple[float, int]]:
        return [(score, -negated) for score, _, negated in sorted(self.heap, reverse=True) if score > 0.0]


def search(index: Index, terms: Sequence[str], k: int) -> list[tuple[float, int]]:
    """The exact top k (score, slot): score descending, then newer ts, then lower slot."""
    n = len(index)
    weights = [(t, _idf(n, len(index.postings[t])) * _BOOST) for t in terms if t in index.postings]
    if not weights or k <= 0:
        return []
    query = _Query(index, weights, k)
    frequent = [(t, w) for t, w in weights if t in index.ones or t in index.others]
    rare = [t for t, _ in weights if not (t in index.ones or t in index.others)]
    scored = 0
    docs = index.docs
    for slot in {slot for t in rare for slot in index.postings[t]}:
        doc = docs[slot]
        if doc is not None:
            query.offer(slot, query.score(doc, weights), doc)
            scored |= 1 << slot
    if frequent:
        _walk(query, frequent, index.live ^ scored)  # scored ⊆ live
    return query.result()


def _idf(n: int, df: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


Group = tuple[int, int, int, int, float, Others, float]
"""Frequent query terms with the same bitsets (the bigrams of one word, say): tf-1 slots, other
slots, both, a bitmask of the members (query positions), the sum of their weights, their (weight,
tf_max, term) for the other tfs, and their bound at the shortest length."""


def _groups(query: _Query, frequent: list[tuple[str, float]], sat_min: float) -> list[Group]:
    index = query.index
    ones, others_of, tf_max = index.ones, index.others, index.tf_max
    found: list[tuple[int, int, list[tuple[int, str, float, float]]]] = []
    for position, (term, weight) in enumerate(frequent):
        member = (position, term, weight, max(1.0, tf_max.get(term, 1.0)))
        one, other = ones.get(term, 0), others_of.get(term, 0)
        for one_seen, other_seen, members in found:  # equal bitsets: compared, never hashed
            if one_seen == one and other_seen == other:
                members.append(member)
                break
        else:
            found.append((one, other, [member]))
    groups: list[Group] = []
    for one, other, members in found:
        weight = top = 0.0
        bits = 0
        for position, _, w, tf_top in members:
            bits |= 1 << position
            weight += w
            top += w * tf_top / (tf_top + sat_min)
        held = tuple((w, tf_top, term) for _, term, w, tf_top in members)
        groups.append((one, other, one | other, bits, weight, held, top))
    groups.sort(key=lambda group: group[6], reverse=True)
    return groups


def _walk(query: _Query, frequent: list[tuple[str, float]], everything: int) -> None:
    """Branch and bound over the frequent terms' patterns (their own scores only: these entries
    hold none of the rare terms)."""
    index = query.index
    sat_min = query.sat_a + query.sat_b * bucket_floor(index.bucket_keys[0]) if index.bucket_keys else 0.0
    groups = _groups(query, frequent, sat_min)
    rest = [0.0] * (len(groups) + 1)
    for i in range(len(groups) - 1, -1, -1):
        rest[i] = rest[i + 1] + groups[i][6]
    _Walker(query, groups, rest, sat_min, frequent).visit(0, everything, 0, 0.0, (), 0.0)


class _Walker:
    __slots__ = ("query", "groups", "rest", "one_factor", "frequent", "held", "sat")

    def __init__(
        self,
        query: _Query,
        groups: list[Group],
        rest: list[float],
        sat_min: float,
        frequent: list[tuple[str, float]],
    ) -> None:
        self.query = query
        self.groups = groups
        self.rest = rest
        self.one_factor = 1.0 / (1.0 + sat_min)  # a tf-1 term's share of its weight at sat_min
        self.frequent = frequent
        self.held: dict[int, list[tuple[str, float]]] = {}
        self.sat: list[float] | None = None

    def visit(self, i: int, docs: int, mask: int, ones_weight: float, others: Others, bound: float) -> None:
        """`docs` hold the terms of `mask`: tf 1 for those summing `ones_weight`, another tf for
        `others`; they lack the other terms of the groups before `i`. `bound`: their score's
        bound at the shortest length."""
        theta = self.query.theta
        if theta > 0.0 and (bound + self.rest[i]) * _SAFETY < theta:
            return
        groups = self.groups
        if i == len(groups):
            if mask:
                self.scan(docs, mask, ones_weight, others)
            return
        one, other, either, members, weight, group_others, top = groups[i]
        j = i + 1
        found = docs & one
        if found:
            ones_bound = bound + weight * self.one_factor
            self.visit(j, found, mask | members, ones_weight + weight, others, ones_bound)
        found = docs & other
        if found:
            self.visit(j, found, mask | members, ones_weight, others + group_others, bound + top)
        if mask or j < len(groups):
            found = docs ^ (docs & either)  # docs & ~either without a negative int (slow)
            if found:
                self.visit(j, found, mask, ones_weight, others, bound)

    def scan(self, docs: int, mask: int, ones_weight: float, others: Others) -> None:
        """Score the entries of one pattern: all of them when they are few, else shortest bucket
        first while the bucket's bound can still enter the top k."""
        query = self.query
        held = self.held.get(mask)
        if held is None:
            held = self.held[mask] = [part for j, part in enumerate(self.frequent) if mask >> j & 1]
        if docs.bit_count() <= SCAN_ALL:
            self._score_all(docs, held)
            return
        buckets = query.index.buckets
        for bucket, sat in zip(query.index.bucket_keys, self._bucket_sat(), strict=True):
            found = docs & buckets[bucket]
            if not found:
                continue
            if query.theta > 0.0 and _bound(sat, ones_weight, others) * _SAFETY < query.theta:
                return
            docs ^= found
            self._score_all(found, held)
            if not docs:
                return

    def _bucket_sat(self) -> list[float]:
        """The length factor K at each bucket's shortest length (computed once per query)."""
        if self.sat is None:
            query = self.query
            self.sat = [query.sat_a + query.sat_b * bucket_floor(b) for b in query.index.bucket_keys]
        return self.sat

    def _score_all(self, found: int, held: list[tuple[str, float]]) -> None:
        """`_Query.score` and `_Query.offer` for each entry of `found`, inlined: this is the loop."""
        query = self.query
        entries = query.index.docs
        sat_a, sat_b, heap, k = query.sat_a, query.sat_b, query.heap, query.k
        theta = query.theta
        while found:
            slot = found.bit_length() - 1
            found ^= 1 << slot
            doc = entries[slot]
            if doc is None:
                continue
            sat = sat_a + sat_b * doc.length
            tfs = doc.tf
            score = 0.0
            for term, weight in held:
                tf = tfs.get(term)
                if tf:
                    score += weight * tf / (tf + sat)
            if score < theta:
                continue  # below the k-th: cannot enter
            key = (score, doc.entry.ts, -slot)
            if len(heap) < k:
                heapq.heappush(heap, key)
            elif key > heap[0]:
                heapq.heapreplace(heap, key)
            else:
                continue
            if len(heap) == k:
                theta = query.theta = heap[0][0]


def _bound(sat: float, ones_weight: float, others: Others) -> float:
    total = ones_weight / (1.0 + sat)
    for weight, tf_top, _ in others:
        total += weight * tf_top / (tf_top + sat)
    return total
