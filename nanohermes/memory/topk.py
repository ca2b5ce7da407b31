"""Exact BM25 top k by branch and bound over per-term bitsets (the scores of bm25.py, unchanged).

Documents get a position by length: the shortest document holds the highest bit. Each query term
has a bitset of the positions of the documents holding it. A depth-first walk decides, term by
term, "holds it" (AND with its bitset) or "lacks it" (AND with its complement), so every branch is
the set of documents with one pattern of query terms. A document's contribution from a term is at
most `idf · tfmax · (K1 + 1) / (tfmax + K(len))`, and K grows with length, so the highest set bit
of a branch (its shortest document) bounds the whole branch: a branch whose bound is below the
current k-th score is dropped unopened. A complete pattern's documents are scored shortest first,
until the bound falls below the k-th score. Every returned score is the full BM25 sum, added in
the same term order as the exhaustive merge, so results are identical to it, ties included.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

# Prune only when the bound is below the k-th score by more than rounding could explain.
_SAFETY = 1.0 + 1e-9


@dataclass(frozen=True)
class Layout:
    """Documents by position, worst first: longer before shorter, then older `tiebreak` before
    newer, then later document before earlier. `sat_at[p]`: the length factor of `doc_at[p]`;
    `block_start[p]`: the lowest position of the same length factor. `terms` memoises each
    term's `TermBits` for this layout."""

    tiebreak: Sequence[int]
    doc_at: list[int]
    pos_of: list[int]
    sat_at: list[float]
    block_start: list[int]
    everything: int  # a bitset of all positions
    terms: dict[str, TermBits] = field(default_factory=dict)


@dataclass(frozen=True)
class TermBits:
    """One term: its score contributions, bitsets of positions with tf = 1, tf ≥ 2 and none, and
    bounds `(a, b)` meaning a contribution of at most a / (b + saturation), for tf = 1 and for
    any tf. `top`: its largest contribution (terms are summed in descending `top` order)."""

    contributions: dict[int, float]
    single: int
    multiple: int
    lacking: int
    single_bound: float  # a, with b = 1
    any_bound: tuple[float, float]
    top: float
    signature: int  # equal bitsets, equal signature


def make_layout(saturation: Sequence[float], tiebreak: Sequence[int]) -> Layout:
    n = len(saturation)
    by_age = sorted(range(n - 1, -1, -1), key=tiebreak.__getitem__)  # older first, later doc first
    doc_at = sorted(by_age, key=saturation.__getitem__, reverse=True)  # stable: keeps that order
    pos_of = [0] * n
    sat_at = [saturation[doc] for doc in doc_at]
    block_start = [0] * n
    for position, doc in enumerate(doc_at):
        pos_of[doc] = position
        if position and sat_at[position] == sat_at[position - 1]:
            block_start[position] = block_start[position - 1]
        else:
            block_start[position] = position
    return Layout(tiebreak, doc_at, pos_of, sat_at, block_start, (1 << n) - 1)


def make_bits(
    postings: dict[int, int], contributions: dict[int, float], weight: float, boost: float, layout: Layout
) -> TermBits:
    """`weight`: the term's idf; `boost`: K1 + 1."""
    size = (len(layout.pos_of) + 7) // 8
    single, multiple = bytearray(size), bytearray(size)
    pos_of = layout.pos_of
    for doc, tf in postings.items():
        position = pos_of[doc]
        (single if tf == 1 else multiple)[position >> 3] |= 1 << (position & 7)
    one, more = int.from_bytes(single, "little"), int.from_bytes(multiple, "little")
    tf_max = max(postings.values())
    return TermBits(
        contributions,
        one,
        more,
        layout.everything ^ (one | more),
        weight * boost,
        (weight * tf_max * boost, float(tf_max)),
        max(contributions.values()),
        hash((one, more)),
    )


class _Group(NamedTuple):
    """Query terms with the same documents and frequencies (such as the bigrams of one word)."""

    bits: TermBits
    members: tuple[int, ...]
    single: float  # the sum of the members' single bounds
    pairs: tuple[tuple[float, float], ...]  # the members' any bounds, where their tf can exceed 1


def _groups(terms: Sequence[TermBits]) -> list[_Group]:
    groups: list[_Group] = []
    seen: dict[int, int] = {}
    for j, term in enumerate(terms):
        g = seen.get(term.signature)
        if g is not None:
            first = groups[g].bits
            if first.single == term.single and first.multiple == term.multiple:
                old = groups[g]
                pairs = old.pairs + (term.any_bound,) if term.any_bound[1] > 1.0 else old.pairs
                groups[g] = _Group(first, (*old.members, j), old.single + term.single_bound, pairs)
                continue
        seen[term.signature] = len(groups)
        pairs = (term.any_bound,) if term.any_bound[1] > 1.0 else ()
        groups.append(_Group(term, (j,), term.single_bound, pairs))
    return groups


class BranchAndBound:
    """One query's top k over `terms`, given in the summation order."""

    def __init__(self, terms: Sequence[TermBits], layout: Layout, k: int) -> None:
        self.terms = terms
        self.groups = groups = _groups(terms)
        # Over groups i…: the single bounds of terms with tf_max 1, and the others' any bounds.
        self.rest_single = rest_single = [0.0]
        Pairs = tuple[tuple[float, float], ...]
        self.rest_pairs: list[Pairs] = [()]
        rest_pairs = self.rest_pairs
        for _, _, single, pairs in reversed(groups):
            if pairs:
                rest_single.append(rest_single[-1])
                rest_pairs.append(pairs + rest_pairs[-1])
            else:
                rest_single.append(rest_single[-1] + single)
                rest_pairs.append(rest_pairs[-1])
        rest_single.reverse()
        rest_pairs.reverse()
        self.layout = layout
        self.k = k
        self.heap: list[tuple[float, int, int]] = []  # (score, tiebreak, -doc): the worst on top
        self.theta = -1.0  # the k-th best score once k documents are held; nothing is pruned before

    def run(self) -> list[tuple[float, int]]:
        self._visit(0, self.layout.everything, (), 0.0, ())
        return [(score, -negated) for score, _, negated in sorted(self.heap, reverse=True)]

    def _open(self, docs: int, i: int, single: float, pairs: tuple[tuple[float, float], ...]) -> bool:
        """Whether a branch could still hold a document of the top k."""
        if self.theta <= 0.0:
            return True
        saturation = self.layout.sat_at[docs.bit_length() - 1]
        total = (single + self.rest_single[i]) / (1.0 + saturation)
        for numerator, tf in pairs:
            total += numerator / (tf + saturation)
        for numerator, tf in self.rest_pairs[i]:
            total += numerator / (tf + saturation)
        return total * _SAFETY >= self.theta

    def _visit(
        self, i: int, docs: int, held: tuple[int, ...], single: float, pairs: tuple[tuple[float, float], ...]
    ) -> None:
        """`docs` hold the terms in `held` (bounded by `single` and `pairs`) and lack the other terms
        of the groups before `i`."""
        if i == len(self.groups):
            if not held:
                return
            held = tuple(sorted(held))
            if pairs:
                self._scan(docs, held, single, pairs)
            else:
                self._scan_uniform(docs, held)
            return
        group = self.groups[i]
        found = docs & group.bits.single
        if found and self._open(found, i + 1, single + group.single, pairs):
            self._visit(i + 1, found, held + group.members, single + group.single, pairs)
        found = docs & group.bits.multiple
        if found and self._open(found, i + 1, single, pairs + group.pairs):
            self._visit(i + 1, found, held + group.members, single, pairs + group.pairs)
        found = docs & group.bits.lacking
        if found and (held or i + 1 < len(self.groups)) and self._open(found, i + 1, single, pairs):
            self._visit(i + 1, found, held, single, pairs)

    def _offer(self, score: float, doc: int) -> bool:
        """Put `doc` in the top k if it belongs there; False if it does not."""
        heap = self.heap
        key = (score, self.layout.tiebreak[doc], -doc)
        if len(heap) < self.k:
            heapq.heappush(heap, key)
            if len(heap) == self.k:
                self.theta = heap[0][0]
            return True
        if key > heap[0]:
            heapq.heapreplace(heap, key)
            self.theta = heap[0][0]
            return True
        return False

    def _scan_uniform(self, docs: int, held: tuple[int, ...]) -> None:
        """Every held term has tf 1: documents of one length score exactly alike, and the layout
        puts the better tie first, so once one fails to enter the rest of its length cannot."""
        contributions = [self.terms[j].contributions for j in held]
        layout = self.layout
        while docs:
            position = docs.bit_length() - 1
            doc = layout.doc_at[position]
            score = 0.0
            for part in contributions:
                score += part[doc]
            if score < self.theta:
                return  # longer documents score no more
            if self._offer(score, doc):
                docs ^= 1 << position
            else:
                docs &= (1 << layout.block_start[position]) - 1

    def _scan(
        self, docs: int, held: tuple[int, ...], single: float, pairs: tuple[tuple[float, float], ...]
    ) -> None:
        """Score the documents of one term pattern, shortest first, while they can still enter."""
        contributions = [self.terms[j].contributions for j in held]
        layout = self.layout
        end = len(self.groups)
        while docs:
            position = docs.bit_length() - 1
            if not self._open(docs, end, single, pairs):
                return
            doc = layout.doc_at[position]
            score = 0.0
            for part in contributions:
                score += part[doc]
            self._offer(score, doc)
            docs ^= 1 << position
