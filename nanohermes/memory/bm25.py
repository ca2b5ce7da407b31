"""Okapi BM25 over an immutable snapshot of the store (SPEC §3.5), with per-term explanations.

The index holds, per term, the postings {document: term frequency}. A term's per-document score
contributions (and its bitsets for topk.py) are computed on first use and memoised for the
snapshot's lifetime, so loading a changed file costs no more than counting terms. A warm top-k query
runs a branch and bound over the terms' bitsets (topk.py) that opens only the documents that could
still enter the top k; a large k or a long query merges the postings instead (MaxScore).
"""

from __future__ import annotations

import heapq
import math
import operator
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from nanohermes.memory import topk
from nanohermes.memory.constants import K1, B

# Branch and bound pays off for a small k (the injected top 4, the CLI's top 10) and a short query.
# Its branches multiply with the query's terms (a pasted page against 500 memories: 100 ms a turn,
# and a RecursionError past about 1,000 terms), so a larger k or a longer query merges the postings.
BRANCH_MAX_K = 16
BRANCH_MAX_TERMS = 16
_BY_TOP = operator.attrgetter("top")  # terms are summed in descending `TermBits.top` order


@dataclass(frozen=True)
class TermScore:
    """One query term's part in one document's score."""

    term: str
    tf: int
    df: int
    idf: float
    contribution: float


@dataclass(frozen=True)
class Explanation:
    """Why a document scored what it did: the sum of its terms' contributions."""

    score: float
    terms: tuple[TermScore, ...]
    doc_len: int
    avgdl: float
    n_docs: int


def query_terms(tokens: Iterable[str]) -> list[str]:
    """Each distinct query token once, in query order."""
    return list(dict.fromkeys(tokens))


def idf(n_docs: int, df: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


class Bm25Index:
    """BM25 over a fixed list of token lists (document i = docs[i])."""

    def __init__(self, docs: Sequence[Sequence[str]]) -> None:
        self.n_docs = len(docs)
        self.doc_len = [len(doc) for doc in docs]
        self.avgdl = sum(self.doc_len) / self.n_docs if self.n_docs else 0.0
        postings: dict[str, dict[int, int]] = {}
        for index, doc in enumerate(docs):
            for term, tf in Counter(doc).items():
                found = postings.get(term)
                if found is None:
                    postings[term] = {index: tf}
                else:
                    found[index] = tf
        self._postings = postings
        self._contributions: dict[str, dict[int, float]] = {}
        self._k_doc: list[float] | None = None
        self._max: dict[str, float] = {}
        self._layout: topk.Layout | None = None

    def _saturation(self) -> list[float]:
        """Per document: K1 · (1 − B + B · len / max(avgdl, 1)), the length part of the denominator."""
        if self._k_doc is None:
            avgdl = max(self.avgdl, 1.0)
            self._k_doc = [K1 * (1.0 - B + B * length / avgdl) for length in self.doc_len]
        return self._k_doc

    def df(self, term: str) -> int:
        return len(self._postings.get(term, ()))

    def contributions(self, term: str) -> dict[int, float]:
        """{document: this term's score contribution} for every document holding `term`."""
        cached = self._contributions.get(term)
        if cached is not None:
            return cached
        postings = self._postings.get(term)
        if not postings:
            return {}
        weight = idf(self.n_docs, len(postings))
        saturation = self._saturation()
        boost = K1 + 1.0
        result = {doc: weight * (tf * boost) / (tf + saturation[doc]) for doc, tf in postings.items()}
        self._contributions[term] = result
        return result

    def scores(self, terms: Sequence[str]) -> dict[int, float]:
        """{document: score} for every document matching at least one of `terms` (distinct)."""
        parts = [self.contributions(term) for term in terms]
        parts = [part for part in parts if part]
        if not parts:
            return {}
        if len(parts) == 1:
            return parts[0]
        parts.sort(key=len, reverse=True)
        total = dict(parts[0])
        get = total.get
        for part in parts[1:]:
            for doc, value in part.items():
                total[doc] = get(doc, 0.0) + value
        return total

    def _max_contribution(self, term: str) -> float:
        found = self._max.get(term)
        if found is None:
            found = max(self.contributions(term).values(), default=0.0)
            self._max[term] = found
        return found

    def _term_bits(self, term: str, layout: topk.Layout) -> topk.TermBits:
        found = layout.terms.get(term)
        if found is None:
            postings = self._postings[term]
            weight = idf(self.n_docs, len(postings))
            found = topk.make_bits(postings, self.contributions(term), weight, K1 + 1.0, layout)
            layout.terms[term] = found
        return found

    def search(self, terms: Sequence[str], k: int, tiebreak: Sequence[int]) -> list[tuple[float, int]]:
        """The exact top k (see `top`): branch and bound (topk.py), or a merge where that is cheaper."""
        if k <= 0:
            return []
        if k > BRANCH_MAX_K or len(terms) > BRANCH_MAX_TERMS:
            return self.merge_search(terms, k, tiebreak)
        layout = self._layout
        if layout is None or layout.tiebreak is not tiebreak:
            layout = self._layout = topk.make_layout(self._saturation(), tiebreak)
        postings = self._postings
        parts = [self._term_bits(t, layout) for t in terms if t in postings]
        if not parts:
            return []
        parts.sort(key=_BY_TOP, reverse=True)
        return topk.BranchAndBound(parts, layout, k).run()

    def merge_search(self, terms: Sequence[str], k: int, tiebreak: Sequence[int]) -> list[tuple[float, int]]:
        """The exact top k (see `top`), skipping work that cannot change it (MaxScore pruning).

        Terms are merged strongest first. Once k candidates exist and the best score the remaining
        terms could still give a new document is below the current k-th score, no document outside
        the candidates can reach the top k, so the remaining terms only complete the candidates'
        scores. Every returned score is the full BM25 sum.
        """
        parts = [(self._max_contribution(t), self.contributions(t)) for t in terms]
        parts = sorted((part for part in parts if part[1]), key=lambda part: part[0], reverse=True)
        if not parts or k <= 0:
            return []
        remaining = [0.0] * (len(parts) + 1)
        for i in range(len(parts) - 1, -1, -1):
            remaining[i] = remaining[i + 1] + parts[i][0]
        total: dict[int, float] = dict(parts[0][1])
        done = 1
        while done < len(parts):
            reachable = remaining[0] - remaining[done]  # no candidate can score more than this yet
            if (
                len(total) >= k
                and remaining[done] < reachable
                and remaining[done] < heapq.nlargest(k, total.values())[-1]
            ):
                break
            get = total.get
            for doc, value in parts[done][1].items():
                total[doc] = get(doc, 0.0) + value
            done += 1
        for _, part in parts[done:]:
            _complete(total, part)
        return top(total, k, tiebreak)

    def explain(self, terms: Sequence[str], doc: int) -> Explanation:
        parts: list[TermScore] = []
        for term in terms:
            postings = self._postings.get(term, {})
            tf = postings.get(doc, 0)
            if tf:
                value = self.contributions(term)[doc]
                parts.append(TermScore(term, tf, len(postings), idf(self.n_docs, len(postings)), value))
        score = sum(part.contribution for part in parts)
        return Explanation(score, tuple(parts), self.doc_len[doc], self.avgdl, self.n_docs)


def _complete(total: dict[int, float], part: dict[int, float]) -> None:
    """Add `part` to the documents already in `total` (no new documents)."""
    if len(part) < len(total):
        for doc, value in part.items():
            if doc in total:
                total[doc] += value
    else:
        get = part.get
        for doc in total:
            extra = get(doc)
            if extra is not None:
                total[doc] += extra


def top(scores: dict[int, float], k: int, tiebreak: Sequence[int]) -> list[tuple[float, int]]:
    """The k best (score, document), by score descending, then larger `tiebreak` (newer ts), then
    earlier document. Zero and negative scores are dropped."""
    if k <= 0 or not scores:
        return []
    if len(scores) > 4 * k:
        threshold = heapq.nlargest(k, scores.values())[-1]
        candidates = [(doc, s) for doc, s in scores.items() if s >= threshold]
    else:
        candidates = list(scores.items())
    ranked = sorted(
        ((s, doc) for doc, s in candidates if s > 0.0),
        key=lambda item: (-item[0], -tiebreak[item[1]], item[1]),
    )
    return ranked[:k]
