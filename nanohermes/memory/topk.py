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
    pair: tuple[tuple[float, float], ...]  # (any_bound,) where tf can exceed 1, else ()


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
        ((weight * tf_max * boost, float(tf_max)),) if tf_max > 1 else (),
    )


Pairs = tuple[tuple[float, float], ...]
# Query terms with the same documents and frequencies (such as the bigrams of one word): the bitsets
# (tf = 1, tf ≥ 2, none), the members (a bitmask of term indices), the sum of their single bounds
# and their any bounds where tf can exceed 1.
Group = tuple[int, int, int, int, float, Pairs]


def _groups(terms: Sequence[TermBits]) -> list[Group]:
    groups: list[Group] = []
    seen: dict[int, int] = {}
    for j, term in enumerate(terms):
        g = seen.get(term.signature)
        if g is not None and groups[g][0] == term.single and groups[g][1] == term.multiple:
            one, more, lack, members, single, pairs = groups[g]
            groups[g] = (one, more, lack, members | 1 << j, single + term.single_bound, pairs + term.pair)
        else:
            seen[term.signature] = len(groups)
            groups.append((term.single, term.multiple, term.lacking, 1 << j, term.single_bound, term.pair))
    return groups


def _rests(groups: Sequence[Group]) -> list[tuple[float, Pairs]]:
    """Per depth i: over groups i…, the single bounds of terms with tf_max 1, the others' any bounds."""
    rests: list[tuple[float, Pairs]] = [(0.0, ())]
    for group in reversed(groups):
        single, pairs = group[4], group[5]
        rest_single, rest_pairs = rests[-1]
        rests.append((rest_single, pairs + rest_pairs) if pairs else (rest_single + single, rest_pairs))
    rests.reverse()
    return rests


def _bound(saturation: float, single: float, pairs: Pairs, more: Pairs) -> float:
    """The most a document of this saturation can score: single / (1 + sat) + Σ a / (b + sat)."""
    total = single / (1.0 + saturation)
    for numerator, tf in pairs:
        total += numerator / (tf + saturation)
    for numerator, tf in more:
        total += numerator / (tf + saturation)
    return total * _SAFETY


class BranchAndBound:
    """One query's top k over `terms`, given in the summation order."""

    __slots__ = ("contributions", "groups", "rests", "layout", "sat_at", "k", "heap", "theta", "last")

    def __init__(self, terms: Sequence[TermBits], layout: Layout, k: int) -> None:
        self.contributions = [term.contributions for term in terms]
        self.groups = groups = _groups(terms)
        self.last = len(groups)
        self.rests = _rests(groups)
        self.layout = layout
        self.sat_at = layout.sat_at
        self.k = k
        self.heap: list[tuple[float, int, int]] = []  # (score, tiebreak, -doc): the worst on top
        self.theta = -1.0  # the k-th best score once k documents are held; nothing is pruned before

    def run(self) -> list[tuple[float, int]]:
        self._visit(0, self.layout.everything, 0, 0.0, ())
        return [(score, -negated) for score, _, negated in sorted(self.heap, reverse=True)]

    def _visit(self, i: int, docs: int, held: int, single: float, pairs: Pairs) -> None:
        """`docs` hold the terms in `held` (bounded by `single` and `pairs`) and lack the other terms
        of the groups before `i`. It is dropped on entry when its bound (its shortest document with
        the most the groups from `i` on could add) is below the k-th score."""
        theta = self.theta
        if theta > 0.0:
            rest_single, rest_pairs = self.rests[i]
            if _bound(self.sat_at[docs.bit_length() - 1], single + rest_single, pairs, rest_pairs) < theta:
                return
        if i == self.last:
            if held:
                self._scan(docs, held, single, pairs)
            return
        one, more, lack, members, group_single, group_pairs = self.groups[i]
        j = i + 1
        found = docs & one
        if found:
            self._visit(j, found, held | members, single + group_single, pairs)
        found = docs & more
        if found:
            self._visit(j, found, held | members, single, pairs + group_pairs)
        found = docs & lack
        if found and (held or j < self.last):
            self._visit(j, found, held, single, pairs)

    def _scan(self, docs: int, held: int, single: float, pairs: Pairs) -> None:
        """Score the documents of one term pattern, shortest first, while they can still enter.

        Where every held term has tf 1 (no `pairs`), documents of one length score exactly alike and
        the layout puts the better tie first, so once one fails to enter the rest of its length
        cannot, and once one scores below the k-th score no longer one can do better."""
        parts = [part for j, part in enumerate(self.contributions) if held >> j & 1]
        layout = self.layout
        doc_at, block_start, tiebreak, sat_at = (
            layout.doc_at,
            layout.block_start,
            layout.tiebreak,
            self.sat_at,
        )
        heap, k, theta = self.heap, self.k, self.theta
        while docs:
            position = docs.bit_length() - 1
            if pairs and theta > 0.0 and _bound(sat_at[position], single, pairs, ()) < theta:
                break
            doc = doc_at[position]
            score = 0.0
            for part in parts:
                score += part[doc]
            key = (score, tiebreak[doc], -doc)
            if len(heap) < k:
                heapq.heappush(heap, key)
                if len(heap) == k:
                    theta = heap[0][0]
            elif key > heap[0]:
                heapq.heapreplace(heap, key)
                theta = heap[0][0]
            elif pairs:
                pass
            elif score < theta:
                break  # longer documents of this pattern score no more
            else:
                docs &= (1 << block_start[position]) - 1  # nor do the rest of this length
                continue
            docs ^= 1 << position
        self.theta = theta
