"""The BM25F index of a store (SPEC §3.5): per term its postings {order: field-weighted tf}; adding or
removing an entry touches only its terms. Plain dicts are fast enough (under 1 ms at 5,000)."""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from nanohermes.memory.constants import CONTEXT_WEIGHT, K1, B
from nanohermes.memory.entry import Entry
from nanohermes.memory.kinds import Kind
from nanohermes.memory.text import analyze

_LABEL_TERMS = {kind: analyze(f"{kind.label('en')} {kind.label('zh')} {kind.value}") for kind in Kind}


@dataclass(frozen=True, slots=True)
class Doc:
    """An entry's terms, each term's frequency weighted by field (context: CONTEXT_WEIGHT, others 1)."""

    tf: dict[str, float]
    main_len: int
    context_len: int

    @property
    def length(self) -> float:
        return self.main_len + CONTEXT_WEIGHT * self.context_len


def make_doc(kind: Kind, text: str, keys: tuple[str, ...], context: str) -> Doc:
    main = [*analyze(text), *(term for key in keys for term in analyze(key)), *_LABEL_TERMS[kind]]
    tf: dict[str, float] = dict(Counter(main))
    extra = analyze(context) if context else []
    for term, count in Counter(extra).items():
        tf[term] = tf.get(term, 0) + CONTEXT_WEIGHT * count
    return Doc(tf, len(main), len(extra))


@dataclass(frozen=True)
class TermScore:
    """One query term's part in one entry's score, with the query's `words` it came from."""

    term: str
    tf: float
    df: int
    idf: float
    contribution: float
    words: tuple[str, ...] = ()

    @property
    def display(self) -> str:
        """`makefil ← makefiles` when the word was folded, else the term itself."""
        others = [word for word in self.words if word != self.term]
        return f"{self.term} ← {', '.join(others)}" if others else self.term


@dataclass(frozen=True)
class Explanation:
    """Why an entry scored what it did: the sum of its terms' contributions."""

    score: float
    terms: tuple[TermScore, ...]
    doc_len: float
    avgdl: float
    n_docs: int


class Index:
    """Postings by order number. Not thread-safe: the store locks."""

    def __init__(self) -> None:
        self.docs: dict[int, tuple[Entry, Doc]] = {}
        self.postings: dict[str, dict[int, float]] = {}
        self._main = self._context = 0  # total lengths: integers, so updates equal a fresh sum
        self._parts: dict[str, dict[int, float]] = {}  # per term {order: contribution}, until a change

    @property
    def avgdl(self) -> float:
        return (self._main + CONTEXT_WEIGHT * self._context) / len(self.docs) if self.docs else 0.0

    def idf(self, term: str) -> float:
        df = len(self.postings.get(term, ()))
        return math.log(1.0 + (len(self.docs) - df + 0.5) / (df + 0.5))

    def add(self, order: int, entry: Entry, doc: Doc) -> None:
        """Index `entry` (its terms `doc`) under `order`; an entry already there is replaced."""
        old = self.docs.get(order)
        if old is not None and old[1] is doc:  # the same terms (a refreshed ts): scores unchanged
            self.docs[order] = (entry, doc)
            return
        if old is not None:
            self.remove(order)
        self.docs[order] = (entry, doc)
        for term, tf in doc.tf.items():
            self.postings.setdefault(term, {})[order] = tf
        self._main += doc.main_len
        self._context += doc.context_len
        self._parts.clear()

    def remove(self, order: int) -> None:
        _, doc = self.docs.pop(order)
        for term in doc.tf:
            found = self.postings[term]
            del found[order]
            if not found:
                del self.postings[term]
        self._main -= doc.main_len
        self._context -= doc.context_len
        self._parts.clear()

    def contributions(self, term: str) -> dict[int, float]:
        """{order: this term's score contribution} for every entry holding `term`."""
        found = self._parts.get(term)
        if found is None:
            weight, docs = self.idf(term) * (K1 + 1.0), self.docs
            lower, slope = K1 * (1.0 - B), K1 * B / max(self.avgdl, 1.0)
            postings = self.postings.get(term, {})
            found = {o: weight * tf / (tf + lower + slope * docs[o][1].length) for o, tf in postings.items()}
            self._parts[term] = found
        return found

    def search(self, terms: Sequence[str], k: int) -> list[tuple[float, Entry]]:
        """The k best (score, entry) for distinct `terms`: by score, newer ts, then file order."""
        scores: dict[int, float] = {}
        for term in terms:
            for order, value in self.contributions(term).items():
                scores[order] = scores.get(order, 0.0) + value
        if k <= 0 or not scores:
            return []
        floor = heapq.nlargest(k, scores.values())[-1]  # ties at the floor are ranked below
        best = [(score, order) for order, score in scores.items() if score >= floor and score > 0.0]
        best.sort(key=lambda item: (-item[0], -self.docs[item[1]][0].ts, item[1]))
        return [(score, self.docs[order][0]) for score, order in best[:k]]

    def explain(self, order: int, words: dict[str, list[str]]) -> Explanation:
        doc = self.docs[order][1]
        parts = tuple(
            TermScore(
                term,
                doc.tf[term],
                len(self.postings[term]),
                self.idf(term),
                self.contributions(term)[order],
                tuple(dict.fromkeys(found)),
            )
            for term, found in words.items()
            if doc.tf.get(term)
        )
        return Explanation(sum(p.contribution for p in parts), parts, doc.length, self.avgdl, len(self.docs))
