"""The BM25F index of the store, updated incrementally by entry id (SPEC §3.5).

Every live entry has a slot (a small integer); the index keeps per term the postings {slot:
weighted tf}, per slot the entry's document, and the totals BM25 needs (entries, weighted length).
Adding or removing an entry touches only that entry's terms, so `remember` costs no more with 50,000
entries than with 500 apart from writing the file. Slots grow in file order; when they become sparse
the slots are renumbered (amortised O(1)), so slot order is file order.

Scores: `idf = ln(1 + (N − n + 0.5)/(n + 0.5))`, summed over distinct query terms:
`idf · f·(K1+1) / (f + K1·(1 − B + B·len/max(avgdl, 1)))`, f and len the weighted sums.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

from nanohermes.memory.bm25 import Explanation, TermScore, idf
from nanohermes.memory.constants import CONTEXT_WEIGHT, K1, B
from nanohermes.memory.docs import Doc

_BOOST = K1 + 1.0


class Index:
    """Postings by slot, kept in step with the store's entries. Not thread-safe: the store locks."""

    def __init__(self) -> None:
        self.slot_of: dict[str, int] = {}
        self.docs: list[Doc | None] = []
        self.postings: dict[str, dict[int, float]] = {}
        self.main_total = 0
        self.context_total = 0
        self._cache: dict[str, dict[int, float]] = {}  # per term: {slot: contribution}, this version
        self._norm: list[float] | None = None

    def __len__(self) -> int:
        return len(self.slot_of)

    @property
    def avgdl(self) -> float:
        n = len(self.slot_of)
        return (self.main_total + CONTEXT_WEIGHT * self.context_total) / n if n else 0.0

    # ----------------------------------------------------------------- updates

    def add(self, doc: Doc) -> None:
        slot = len(self.docs)
        self.slot_of[doc.entry.id] = slot
        self.docs.append(doc)
        postings = self.postings
        for term, tf in doc.tf.items():
            found = postings.get(term)
            if found is None:
                postings[term] = {slot: tf}
            else:
                found[slot] = tf
        self.main_total += doc.main_len
        self.context_total += doc.context_len
        self._changed()

    def remove(self, entry_id: str) -> None:
        slot = self.slot_of.pop(entry_id)
        doc = self.docs[slot]
        assert doc is not None
        self.docs[slot] = None
        postings = self.postings
        for term in doc.tf:
            found = postings[term]
            del found[slot]
            if not found:
                del postings[term]
        self.main_total -= doc.main_len
        self.context_total -= doc.context_len
        self._changed()

    def replace(self, doc: Doc) -> None:
        """Swap in an entry's new version (same id, e.g. a refreshed duplicate) in place."""
        slot = self.slot_of[doc.entry.id]
        old = self.docs[slot]
        assert old is not None
        if old.tf is doc.tf:
            self.docs[slot] = doc  # same document (ts or source changed): scores do not change
            return
        self.remove(doc.entry.id)
        self.add(doc)

    def apply(self, removed: Iterable[str], changed: Iterable[Doc]) -> None:
        """Remove the entries with ids `removed`, then add or replace the documents `changed`."""
        for entry_id in removed:
            self.remove(entry_id)
        for doc in changed:
            if doc.entry.id in self.slot_of:
                self.replace(doc)
            else:
                self.add(doc)

    def sync(self, docs: Sequence[Doc]) -> None:
        """Make the index hold exactly `docs` (the store's entries in file order), changing only
        the entries that differ; renumber the slots when most of them are free."""
        wanted = {doc.entry.id: doc for doc in docs}
        for entry_id in [i for i in self.slot_of if i not in wanted]:
            self.remove(entry_id)
        current = self.docs
        for doc in docs:
            slot = self.slot_of.get(doc.entry.id)
            if slot is None:
                self.add(doc)
            elif current[slot] is not doc:
                self.replace(doc)
        if len(self.docs) > 2 * len(self.slot_of) + 64:
            self.rebuild(docs)

    def rebuild(self, docs: Iterable[Doc]) -> None:
        self.__init__()  # type: ignore[misc]
        for doc in docs:
            self.add(doc)

    def _changed(self) -> None:
        if self._cache:
            self._cache = {}
        self._norm = None

    # ----------------------------------------------------------------- scoring

    def _saturation(self) -> list[float]:
        """Per slot: K1 · (1 − B + B · len / max(avgdl, 1)), the length part of the denominator."""
        norm = self._norm
        if norm is None:
            avgdl = max(self.avgdl, 1.0)
            norm = [0.0 if doc is None else K1 * (1.0 - B + B * doc.length / avgdl) for doc in self.docs]
            self._norm = norm
        return norm

    def contributions(self, term: str) -> dict[int, float]:
        """{slot: this term's score contribution} for every entry holding `term`."""
        found = self._cache.get(term)
        if found is not None:
            return found
        postings = self.postings.get(term)
        if not postings:
            return {}
        weight = idf(len(self.slot_of), len(postings)) * _BOOST
        sat = self._saturation()
        found = {slot: weight * tf / (tf + sat[slot]) for slot, tf in postings.items()}
        self._cache[term] = found
        return found

    def scores(self, terms: Sequence[str]) -> dict[int, float]:
        """{slot: score} for every entry matching at least one of `terms` (distinct, summed in order)."""
        total: dict[int, float] = {}
        get = total.get
        for term in terms:
            for slot, value in self.contributions(term).items():
                total[slot] = get(slot, 0.0) + value
        return total

    def search(self, terms: Sequence[str], k: int) -> list[tuple[float, Doc]]:
        """The k best (score, doc): score descending, then newer ts, then earlier in the file."""
        scores = self.scores(terms)
        if k <= 0 or not scores:
            return []
        docs = self.docs

        def rank(item: tuple[int, float]) -> tuple[float, int, int]:
            doc = docs[item[0]]
            assert doc is not None
            return (item[1], doc.entry.ts, -item[0])

        best = heapq.nlargest(k, scores.items(), key=rank)
        return [(score, doc) for slot, score in best if score > 0.0 and (doc := docs[slot]) is not None]

    def explain(self, terms: Sequence[str], entry_id: str, words: dict[str, list[str]]) -> Explanation:
        slot = self.slot_of[entry_id]
        doc = self.docs[slot]
        assert doc is not None
        parts: list[TermScore] = []
        for term in terms:
            tf = doc.tf.get(term)
            if tf:
                df = len(self.postings[term])
                contribution = self.contributions(term)[slot]
                parts.append(
                    TermScore(
                        term, tf, df, idf(len(self.slot_of), df), contribution, tuple(words.get(term, ()))
                    )
                )
        score = sum(part.contribution for part in parts)
        return Explanation(score, tuple(parts), doc.length, self.avgdl, len(self.slot_of))
