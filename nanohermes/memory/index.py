"""The BM25F index of the store, updated incrementally by entry id (SPEC §3.5).

Every live entry has a slot (a small integer); the index keeps per term the postings {slot:
weighted tf}, per slot the entry's document, and the totals BM25 needs (entries, weighted length).
Adding or removing an entry touches only that entry's terms, so `remember` costs no more with 50,000
entries than with 500 apart from writing the file. Slots grow in file order, a replaced entry keeps
its slot, and when slots become sparse, or another program reordered the file, they are renumbered
(amortised O(1)): slot order is file order, which orders equal scores of equal ts.

Scores: `idf = ln(1 + (N − n + 0.5)/(n + 0.5))`, summed over distinct query terms:
`idf · f·(K1+1) / (f + K1·(1 − B + B·len/max(avgdl, 1)))`, f and len the weighted sums.

Search: the compiled scorer (_scorer.c, built by setup.py where a C compiler was there) adds up
every posting of the query's terms, reading the frequent terms' packed postings (packs.py); without
it, topk.py's branch and bound or the merge below. All three return the same floats.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable, Iterable, Sequence

from nanohermes.memory import packs, topk
from nanohermes.memory.bitsets import RARE_DF, Buckets, bitset, saturation
from nanohermes.memory.bm25 import Explanation, TermScore, idf
from nanohermes.memory.constants import CONTEXT_WEIGHT, K1
from nanohermes.memory.docs import Doc

compiled_top_k: Callable[..., list[tuple[float, int]]] | None
try:  # built from _scorer.c where a C compiler was there at install (setup.py); else pure Python
    from nanohermes.memory._scorer import top_k as compiled_top_k
except ImportError:
    compiled_top_k = None

_BOOST = K1 + 1.0
# Branch and bound pays off for a small k (the injected 4, the CLI's 10, memory_search's ≤ 20) and
# a short query; its branches multiply with the query's terms, so a pasted page merges instead.
BRANCH_MAX_K = 32
BRANCH_MAX_TERMS = 12
MAX_MEMOISED = 256


class Index:
    """Postings by slot, kept in step with the store's entries. Not thread-safe: the store locks."""

    def __init__(self) -> None:
        self.slot_of: dict[str, int] = {}
        self.docs: list[Doc | None] = []
        self.lengths = array("d")  # per slot: the weighted length (0 for a free slot), packed
        self.stamps: list[int] = []  # per slot: the entry's ts (ties: newer first; any size)
        self.postings: dict[str, dict[int, float]] = {}
        self.main_total = 0
        self.context_total = 0
        # For topk.py, kept up to date on every change: bitsets over slots.
        self.live = 0
        self.ones: dict[str, int] = {}  # frequent term → slots where its tf is exactly 1
        self.others: dict[str, int] = {}  # frequent term → slots with another tf
        self.tf_max: dict[str, float] = {}  # frequent term → an upper bound of its other tfs
        self.packed: dict[str, packs.Pack] = {}  # frequent term → its postings packed (packs.py);
        # the frequent terms are exactly its keys
        self.buckets = Buckets()
        self._cache: dict[str, dict[int, float]] = {}  # per term: {slot: contribution}, this version
        self._norm: list[float] | None = None
        self._results: dict[tuple[tuple[str, ...], int], list[tuple[float, Doc]]] = {}
        self._scratch = array("d")  # per slot 0.0: the compiled scorer's sums, zeroed after each use

    def __len__(self) -> int:
        return len(self.slot_of)

    @property
    def avgdl(self) -> float:
        n = len(self.slot_of)
        return (self.main_total + CONTEXT_WEIGHT * self.context_total) / n if n else 0.0

    # ----------------------------------------------------------------- updates

    def add(self, doc: Doc) -> None:
        """Index `doc` in a new slot after every other (appended to the file: slot order stays
        file order)."""
        self.docs.append(None)
        self.lengths.append(0.0)
        self.stamps.append(0)
        self._put(len(self.docs) - 1, doc)
        self._changed()

    def _put(self, slot: int, doc: Doc) -> None:
        """Index `doc` in the free `slot`."""
        bit = 1 << slot
        self.slot_of[doc.entry.id] = slot
        self.docs[slot] = doc
        self.lengths[slot] = doc.length
        self.stamps[slot] = doc.entry.ts
        postings, packed = self.postings, self.packed
        for term, tf in doc.tf.items():
            found = postings.get(term)
            if found is None:
                postings[term] = {slot: tf}
                continue
            found[slot] = tf
            held = packed.get(term)
            if held is not None:  # a frequent term
                self._set_bit(term, tf, bit)
                packs.put(held, slot, tf)
            elif len(found) > RARE_DF:
                self._make_bits(term, found)
        self.live |= bit
        self.buckets.add(slot, doc.length)
        self.main_total += doc.main_len
        self.context_total += doc.context_len

    def _set_bit(self, term: str, tf: float, bit: int) -> None:
        if tf == 1:
            self.ones[term] = self.ones.get(term, 0) | bit
        else:
            self.others[term] = self.others.get(term, 0) | bit
            if tf > self.tf_max.get(term, 0.0):
                self.tf_max[term] = tf

    def _make_bits(self, term: str, postings: dict[int, float]) -> None:
        """A term became frequent: give it bitsets and a pack."""
        for slot, tf in postings.items():
            self._set_bit(term, tf, 1 << slot)
        self.packed[term] = packs.pack(postings.items())

    def _clear_bit(self, term: str, bit: int) -> None:
        for table in (self.ones, self.others):
            held = table.get(term)
            if held is not None and held & bit:
                held ^= bit
                if held:
                    table[term] = held
                else:
                    del table[term]

    def remove(self, entry_id: str) -> None:
        self._take(self.slot_of.pop(entry_id))
        self._changed()

    def _take(self, slot: int) -> None:
        """Take the document in `slot` out of the index; the slot stays free."""
        doc = self.docs[slot]
        assert doc is not None
        self.docs[slot] = None
        self.lengths[slot] = 0.0
        bit = 1 << slot
        postings = self.postings
        for term in doc.tf:
            found = postings[term]
            del found[slot]
            if not found:
                del postings[term]
            held = self.packed.get(term)
            if held is not None:  # a frequent term
                self._clear_bit(term, bit)
                packs.take(held, slot)
                if len(found) <= RARE_DF // 2:  # rare again (with hysteresis): no bitsets
                    self.ones.pop(term, None)
                    self.others.pop(term, None)
                    self.tf_max.pop(term, None)
                    del self.packed[term]
        self.live ^= bit
        self.buckets.remove(slot, doc.length)
        self.main_total -= doc.main_len
        self.context_total -= doc.context_len

    def replace(self, doc: Doc) -> None:
        """Swap in an entry's new version (same id, e.g. a refreshed duplicate) in its own slot:
        it keeps its place in the file, so it keeps its place among equal scores."""
        slot = self.slot_of[doc.entry.id]
        old = self.docs[slot]
        assert old is not None
        if old.tf is doc.tf:
            self.docs[slot] = doc  # same document (ts or source changed): scores do not change
            self.stamps[slot] = doc.entry.ts
            if self._results:  # they hold the old entry, and ts orders equal scores
                self._results = {}
            return
        self._take(slot)
        self._put(slot, doc)
        self._changed()

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
        slot_of, current = self.slot_of, self.docs
        changed = [
            doc for doc in docs if (slot := slot_of.get(doc.entry.id)) is None or current[slot] is not doc
        ]
        kept = len(docs) - len(changed)
        if 4 * len(changed) > len(docs) or len(slot_of) - kept > len(docs) // 4:
            self.rebuild(docs)  # most of it is new: build it in bulk
            return
        wanted = {doc.entry.id for doc in docs}
        self.apply([i for i in slot_of if i not in wanted], changed)
        if self.sparse or not self._in_file_order(docs):
            self.rebuild(docs)

    def _in_file_order(self, docs: Sequence[Doc]) -> bool:
        """Whether the slots of `docs` (the file's entries, in file order) increase: equal scores
        are ordered by the file, and another program may have reordered its lines."""
        slot_of = self.slot_of
        previous = -1
        for doc in docs:
            slot = slot_of[doc.entry.id]
            if slot <= previous:
                return False
            previous = slot
        return True

    @property
    def sparse(self) -> bool:
        """Whether most slots are free (entries were removed): then `rebuild` renumbers them."""
        return len(self.docs) > 2 * len(self.slot_of) + 64

    def rebuild(self, docs: Iterable[Doc]) -> None:
        """Hold exactly `docs`, in slots 0, 1, … (file order); bitsets built in one pass each."""
        self.__init__()  # type: ignore[misc]
        postings = self.postings
        for slot, doc in enumerate(docs):
            self.slot_of[doc.entry.id] = slot
            self.docs.append(doc)
            self.lengths.append(doc.length)
            self.stamps.append(doc.entry.ts)
            for term, tf in doc.tf.items():
                found = postings.get(term)
                if found is None:
                    postings[term] = {slot: tf}
                else:
                    found[slot] = tf
            self.main_total += doc.main_len
            self.context_total += doc.context_len
        size = len(self.docs)
        self.live = (1 << size) - 1
        self.buckets = Buckets.build(self.lengths)
        for term, found in postings.items():
            if len(found) > RARE_DF:
                self.packed[term] = packs.pack(found.items())
                ones = [slot for slot, tf in found.items() if tf == 1]
                if ones:
                    self.ones[term] = bitset(ones, size)
                if len(ones) < len(found):
                    others = [slot for slot, tf in found.items() if tf != 1]
                    self.others[term] = bitset(others, size)
                    self.tf_max[term] = max(found[slot] for slot in others)

    def _changed(self) -> None:
        if self._cache:
            self._cache = {}
        if self._results:
            self._results = {}
        self._norm = None

    # ----------------------------------------------------------------- scoring

    def _saturation(self) -> list[float]:
        """Per slot: K1 · (1 − B + B · len / max(avgdl, 1)), the length part of the denominator,
        computed as topk.py computes it (so both scorers agree bit for bit)."""
        norm = self._norm
        if norm is None:
            sat_a, sat_b = saturation(self.avgdl)
            norm = [sat_a + sat_b * length for length in self.lengths]
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
        """The k best (score, doc): score descending, then newer ts, then earlier in the file.

        With the compiled scorer, every query merges the postings in C. Without it, a short query
        with a small k runs the branch and bound of topk.py (no work per posting); a long one (a
        pasted page) or a large k merges the postings. The three agree bit for bit. Results are
        memoised until the index changes."""
        key = (tuple(terms), k)
        found = self._results.get(key)
        if found is not None:
            return found
        if compiled_top_k is not None:
            ranked = self.compiled_search(terms, k)
        elif k <= BRANCH_MAX_K and len(terms) <= BRANCH_MAX_TERMS:
            ranked = topk.search(self, terms, k)
        else:
            ranked = self.merge_search(terms, k)
        docs = self.docs
        found = [(score, doc) for score, slot in ranked if (doc := docs[slot]) is not None]
        if len(self._results) >= MAX_MEMOISED:
            self._results.clear()
        self._results[key] = found
        return found

    def compiled_search(self, terms: Sequence[str], k: int) -> list[tuple[float, int]]:
        """The same top k as `merge_search`, merged by _scorer.c (only when it was built)."""
        assert compiled_top_k is not None
        postings, packed, n = self.postings, self.packed, len(self.slot_of)
        held: list[packs.Pack | dict[int, float]] = []
        weights: list[float] = []
        for term in terms:
            found = postings.get(term)
            if found:
                weights.append(idf(n, len(found)) * _BOOST)
                held.append(packed.get(term, found))
        if not held or k <= 0:
            return []
        sat_a, sat_b = saturation(self.avgdl)
        scratch = self._scratch
        if len(scratch) < len(self.lengths):
            scratch.frombytes(bytes(8 * (len(self.lengths) - len(scratch))))
        return compiled_top_k(held, weights, self.lengths, self.stamps, scratch, sat_a, sat_b, k)

    def merge_search(self, terms: Sequence[str], k: int) -> list[tuple[float, int]]:
        """The same top k as `search`, from every matching entry's full score."""
        scores = self.scores(terms)
        if k <= 0 or not scores:
            return []
        docs = self.docs

        def rank(item: tuple[int, float]) -> tuple[float, int, int]:
            doc = docs[item[0]]
            assert doc is not None
            return (item[1], doc.entry.ts, -item[0])

        best = heapq.nlargest(k, scores.items(), key=rank)
        return [(score, slot) for slot, score in best if score > 0.0]

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
