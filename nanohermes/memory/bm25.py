"""BM25 pieces shared by the index and its explanations (SPEC §3.5)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class TermScore:
    """One query term's part in one entry's score. `term` is the analysed (stemmed) term, `words`
    the query's words it came from; `tf` is the field-weighted frequency (context counts
    CONTEXT_WEIGHT per occurrence)."""

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


def query_terms(terms: Iterable[str]) -> list[str]:
    """Each distinct query term once, in query order."""
    return list(dict.fromkeys(terms))


def idf(n_docs: int, df: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
