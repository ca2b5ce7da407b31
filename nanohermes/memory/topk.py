"""Exact BM25F top k without touching every posting (the scores of index.py, unchanged).

The index keeps, updated on every add and remove (no per-query building; see bitsets.py):
- per frequent term (more than RARE_DF entries hold it) two bitsets over slots: entries where its
  weighted tf is exactly 1, and the others (with `tf_max`, an upper bound of their tf);
- per length bucket (weighted lengths within a factor BUCKET_RATIO) its shortest length and the
  bitset of the slots in it or any shorter bucket; per slot the entry's weighted length and ts.

A query first scores every entry holding one of its rare terms (few by definition), exactly. The
remaining entries hold only frequent terms: a depth-first walk decides term by term "tf 1", "other
tf" or "lacks it" by AND-ing bitsets, so each branch is the set of entries with one pattern. A
contribution is at most `idf · tf·(K1+1) / (tf + K(len))` and K grows with length, so a branch is
bounded by its terms at the shortest length; a branch whose bound is below the current k-th score
is dropped unopened. A complete pattern is scanned bucket by bucket, shortest first, until there
are k results; then one AND keeps its entries in the buckets whose bound at their shortest length
reaches the k-th score, and only those are scored. Within a pattern whose terms all
have tf 1 an entry's score depends on its length only, so it is computed once per length.

Every returned score is the full sum, added in query-term order, as the exhaustive merge adds it
(`weight · tf / (tf + K)` with `K = sat_a + sat_b · len`, see `saturation`), so both agree bit for
bit, ties included.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from nanohermes.memory.bitsets import bitset, saturation
from nanohermes.memory.constants import K1

if TYPE_CHECKING:
    from nanohermes.memory.index import Index

SCAN_ALL = 8
"""A pattern with other tfs and at most this many entries is scored whole, without its buckets."""
_CHEAP_COUNT = 1 << 14  # counting an int's bits costs in proportion to its length: only below this
_SAFETY = 1.0 + 1e-9  # prune only when the bound is below the k-th score by more than rounding
_BOOST = K1 + 1.0

Heap = list[tuple[float, int, int]]  # (score, ts, -slot): the worst on top
Others = tuple[tuple[float, float], ...]  # held terms with a tf other than 1: (weight, tf_max)
Parts = list[
    tuple[float, str | None]
]  # a pattern's held terms in query order: (weight, term or None if tf 1)


class _Query:
    """One query's exact top k over an index (see the module docstring)."""

    __slots__ = ("index", "weights", "k", "heap", "theta", "sat_a", "sat_b")

    def __init__(self, index: Index, weights: list[tuple[str, float]], k: int) -> None:
        self.index = index
        self.weights = weights  # (term, idf · (K1 + 1)) in query order
        self.k = k
        self.heap: Heap = []
        self.theta = -1.0
        self.sat_a, self.sat_b = saturation(index.avgdl)

    def score_rare(self, rare: list[str]) -> int:
        """Score every entry holding one of the `rare` terms on all the query's terms; their slots."""
        index = self.index
        postings, docs, lengths, stamps = index.postings, index.docs, index.lengths, index.stamps
        slots = set().union(*[postings[term] for term in rare])
        weights, sat_a, sat_b = self.weights, self.sat_a, self.sat_b
        heap, k, theta = self.heap, self.k, self.theta
        for slot in slots:
            tfs = docs[slot].tf  # type: ignore[union-attr]  # postings hold live slots only
            sat = sat_a + sat_b * lengths[slot]
            total = 0.0
            for term, weight in weights:
                if term in tfs:
                    tf = tfs[term]
                    total += weight * tf / (tf + sat)
            if total >= theta:  # else below the k-th: cannot enter
                theta = _pushed(heap, k, (total, stamps[slot], -slot), theta)
        self.theta = theta
        return bitset(slots, len(docs))

    def result(self) -> list[tuple[float, int]]:
        return [(score, -negated) for score, _, negated in sorted(self.heap, reverse=True) if score > 0.0]


def search(index: Index, terms: Sequence[str], k: int) -> list[tuple[float, int]]:
    """The exact top k (score, slot): score descending, then newer ts, then lower slot."""
    if k <= 0:
        return []
    n = len(index.slot_of)
    postings, ones_of, others_of = index.postings, index.ones, index.others
    log = math.log
    weights: list[tuple[str, float]] = []
    frequent: list[Frequent] = []
    rare: list[str] = []
    for term in terms:
        found = postings.get(term)
        if found:
            df = len(found)
            weight = log(1.0 + (n - df + 0.5) / (df + 0.5)) * _BOOST  # bm25.idf · (K1 + 1)
            weights.append((term, weight))
            one, other = ones_of.get(term, 0), others_of.get(term, 0)
            if one or other:
                frequent.append((term, weight, one, other))
            else:
                rare.append(term)
    if not weights:
        return []
    query = _Query(index, weights, k)
    scored = query.score_rare(rare) if rare else 0
    if frequent:
        _walk(query, frequent, index.live ^ scored)  # scored ⊆ live
    return query.result()


Frequent = tuple[str, float, int, int]
"""A query term with bitsets: itself, its weight, its tf-1 slots and its other slots."""
Part = tuple[int, float, str | None]
"""A held query term: its position among the frequent terms, its weight, itself (None: tf 1)."""
Held = tuple[Part, ...]
Group = tuple[int, int, int, Held, Held, int, float, Others, float]
"""Frequent query terms with the same bitsets (the bigrams of one word, say): tf-1 slots, other
slots, both; the members as held with tf 1 and with another tf; a bitmask of their positions;
the sum of their weights; (that sum, their largest tf_max) for the other tfs; their bound at the
shortest length."""


def _groups(index: Index, frequent: list[Frequent], sat_min: float) -> list[Group]:
    tf_max = index.tf_max
    groups: list[Group] = []
    for position, (term, weight, one, other) in enumerate(frequent):
        tf_top = max(1.0, tf_max.get(term, 1.0)) if other else 1.0
        for place, group in enumerate(groups):
            if group[0] == one and group[1] == other:  # equal bitsets: compared, never hashed
                groups[place] = _joined(group, position, weight, term, tf_top, sat_min)
                break
        else:
            top = weight * tf_top / (tf_top + sat_min)
            as_ones: Held = ((position, weight, None),)
            as_others: Held = ((position, weight, term),)
            bounds = ((weight, tf_top),)
            groups.append((one, other, one | other, as_ones, as_others, 1 << position, weight, bounds, top))
    groups.sort(key=lambda group: group[8], reverse=True)
    return groups


def _joined(group: Group, position: int, weight: float, term: str, tf_top: float, sat_min: float) -> Group:
    """`group` with one more member: a term with the same bitsets (the bigrams of one word, say)."""
    one, other, either, as_ones, as_others, bits, total, bounds, _ = group
    total += weight
    tf_top = max(tf_top, bounds[0][1])
    as_ones = (*as_ones, (position, weight, None))
    as_others = (*as_others, (position, weight, term))
    top = total * tf_top / (tf_top + sat_min)
    return (one, other, either, as_ones, as_others, bits | 1 << position, total, ((total, tf_top),), top)


def _walk(query: _Query, frequent: list[Frequent], everything: int) -> None:
    """Branch and bound over the frequent terms' patterns (their own scores only: these entries
    hold none of the rare terms)."""
    index = query.index
    if not index.buckets.keys:
        return
    sat_min = query.sat_a + query.sat_b * index.buckets.floors[0]
    groups = _groups(index, frequent, sat_min)
    rest = [0.0] * (len(groups) + 1)
    for i in range(len(groups) - 1, -1, -1):
        rest[i] = rest[i + 1] + groups[i][8]
    _Walker(query, groups, rest, sat_min).visit(0, everything, (), 0, 0.0, (), 0.0)


class _Walker:
    __slots__ = ("query", "groups", "rest", "one_factor", "memo")

    def __init__(self, query: _Query, groups: list[Group], rest: list[float], sat_min: float) -> None:
        self.query = query
        self.groups = groups
        self.rest = rest
        self.one_factor = 1.0 / (1.0 + sat_min)  # a tf-1 term's share of its weight at sat_min
        self.memo: dict[int, dict[float, float]] = {}  # per all-tf-1 pattern: {length: score}

    def visit(
        self, i: int, docs: int, held: Held, ones: int, ones_weight: float, others: Others, bound: float
    ) -> None:
        """`docs` hold the terms `held` and lack the other terms of the groups before `i`: tf 1
        for the bitmask `ones` (weights summing to `ones_weight`), another tf for the rest
        (`others`: their weights and tf bounds). `bound`: their score's bound at the shortest
        length. A branch is opened only when its bound with the groups after it reaches the
        k-th score."""
        groups = self.groups
        one, other, either, as_ones, as_others, members, weight, bounds, top = groups[i]
        j = i + 1
        last = j == len(groups)
        descend = self.scan if last else self.visit  # the last group: each branch is a pattern
        query = self.query
        rest = self.rest[j]
        reach = bound + weight * self.one_factor
        if (reach + rest) * _SAFETY >= query.theta:
            found = docs & one
            if found:
                descend(j, found, held + as_ones, ones | members, ones_weight + weight, others, reach)
        if other and (bound + top + rest) * _SAFETY >= query.theta:
            found = docs & other
            if found:
                descend(j, found, held + as_others, ones, ones_weight, others + bounds, bound + top)
        if (held or not last) and (bound + rest) * _SAFETY >= query.theta:
            found = docs ^ (docs & either)  # docs & ~either without a negative int (slow)
            if found:
                descend(j, found, held, ones, ones_weight, others, bound)

    def scan(
        self, _: int, docs: int, held: Held, ones: int, ones_weight: float, others: Others, __: float
    ) -> None:
        """Score the entries of one pattern that can still enter the top k: shortest bucket first
        until there are k results, then at once those of every bucket whose bound reaches the
        k-th score (one AND with the union of those buckets)."""
        query = self.query
        parts = sorted(held)  # query order: the merge's order of addition
        memo = None if others else self.memo.setdefault(ones, {})
        if not docs & (docs - 1) or (
            others and docs.bit_length() <= _CHEAP_COUNT and docs.bit_count() <= SCAN_ALL
        ):
            self._score_all(docs, parts, memo)  # one entry, or a few with another tf: all of them
            return
        buckets = query.index.buckets
        if query.theta <= 0.0:  # fewer than k results yet: fill the heap from the shortest
            bits, shorter = buckets.bits, buckets.shorter
            low, high = 0, len(shorter) - 1  # the shortest bucket holding any of docs (⊆ live)
            while low < high:
                middle = (low + high) // 2
                if docs & shorter[middle]:
                    high = middle
                else:
                    low = middle + 1
            for bucket in buckets.keys[low:]:
                found = docs & bits[bucket]
                if found:
                    self._score_all(found, parts, memo)
                    docs ^= found
                    if not docs:
                        return
                    if query.theta > 0.0:
                        break
        cut = self._cut(ones_weight, others)
        if cut >= 0:
            docs &= buckets.shorter[cut]
            if docs:
                self._score_all(docs, parts, memo)

    def _cut(self, ones_weight: float, others: Others) -> int:
        """The position of the longest bucket whose bound at its shortest length reaches the
        k-th score (-1 if none): the bound falls as the length grows."""
        query = self.query
        floors = query.index.buckets.floors
        theta, sat_a, sat_b = query.theta, query.sat_a, query.sat_b
        if theta <= 0.0:  # no k-th score yet: every bucket
            return len(floors) - 1
        if not others and sat_b > 0.0:
            # ones_weight / (1 + a + b · floor) · SAFETY ≥ theta, solved for floor (a hair wide)
            limit = (ones_weight * _SAFETY / theta - 1.0 - sat_a) / sat_b
            return bisect.bisect_right(floors, limit + abs(limit) * 1e-9 + 1e-9) - 1

        def reaches(position: int) -> bool:
            sat = sat_a + sat_b * floors[position]
            bound = ones_weight / (1.0 + sat)
            for weight, tf_top in others:
                bound += weight * tf_top / (tf_top + sat)
            return bound * _SAFETY >= theta

        low, high = -1, len(floors) - 1  # reaches(low) (or low = -1), not reaches(above high)
        if reaches(high):
            return high
        high -= 1
        while low < high:
            middle = (low + high + 1) // 2
            if reaches(middle):
                low = middle
            else:
                high = middle - 1
        return low

    def _score_all(self, found: int, parts: list[Part], memo: dict[float, float] | None) -> None:
        """Score and offer each entry of `found`, inlined: this is the loop. `memo`: {length:
        score} when every part has tf 1 (the score then depends on the length only)."""
        query = self.query
        index = query.index
        lengths, stamps = index.lengths, index.stamps
        sat_a, sat_b, heap, k = query.sat_a, query.sat_b, query.heap, query.k
        theta = query.theta
        entries = index.docs
        while found:
            slot = found.bit_length() - 1
            found ^= 1 << slot
            length = lengths[slot]
            if memo is not None:
                score = memo.get(length)
                if score is None:
                    sat = 1 + (sat_a + sat_b * length)  # as weight · tf / (tf + sat) adds it for tf 1
                    score = 0.0
                    for _, weight, _ in parts:
                        score += weight / sat
                    memo[length] = score
            else:
                sat = sat_a + sat_b * length
                tfs = entries[slot].tf  # type: ignore[union-attr]  # found ⊆ live slots
                score = 0.0
                for _, weight, term in parts:
                    if term is None:
                        score += weight / (1 + sat)
                    else:
                        tf = tfs[term]
                        score += weight * tf / (tf + sat)
            if score >= theta:  # else below the k-th: cannot enter
                theta = _pushed(heap, k, (score, stamps[slot], -slot), theta)
        query.theta = theta


def _pushed(heap: Heap, k: int, key: tuple[float, int, int], theta: float) -> float:
    """Offer `key` to the heap of the k best; the k-th score after it (`theta` while not full).
    Called only for an entry that reaches `theta`, so most entries cost no call."""
    if len(heap) < k:
        heapq.heappush(heap, key)
    elif key > heap[0]:
        heapq.heapreplace(heap, key)
    else:
        return theta
    return heap[0][0] if len(heap) == k else theta
