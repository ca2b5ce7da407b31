"""Each entry's derived data (SPEC §3.5): its BM25F document and its duplicate key.

An entry's document has the fields text, keys and the kind's labels (weight 1 each) and context
(weight CONTEXT_WEIGHT); a field's weight multiplies its term frequencies and its length. Derived
data is computed once per entry and kept by entry id (store.py), so a write never re-analyses the
entries it did not change.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from nanohermes.memory.analysis import analyze
from nanohermes.memory.constants import CONTEXT_WEIGHT
from nanohermes.memory.entry import Entry
from nanohermes.memory.kinds import Kind
from nanohermes.memory.text import normalize

_LABEL_TERMS: dict[Kind, list[str]] = {
    kind: analyze(kind.label("en")) + analyze(kind.label("zh")) + analyze(kind.value) for kind in Kind
}


@dataclass(frozen=True, slots=True)
class Doc:
    """`tf`: each term's weighted frequency over the fields; `length`: the weighted length
    (`main_len` + CONTEXT_WEIGHT · `context_len`); `key`: the normalized text (duplicate test)."""

    entry: Entry
    tf: dict[str, float]
    main_len: int
    context_len: int
    key: str
    length: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "length", self.main_len + CONTEXT_WEIGHT * self.context_len)

    def same_source(self, entry: Entry) -> bool:
        """Whether `entry` would derive the same document (ts and source do not matter)."""
        old = self.entry
        return old is entry or (
            old.text == entry.text
            and old.kind is entry.kind
            and old.keys == entry.keys
            and old.context == entry.context
        )


def main_terms(entry: Entry) -> list[str]:
    """The terms of the weight-1 fields: text, keys, the kind's labels (en + zh) and name."""
    terms = analyze(entry.text)
    for key in entry.keys:
        terms.extend(analyze(key))
    terms.extend(_LABEL_TERMS[entry.kind])
    return terms


def make_doc(entry: Entry, key: str | None = None) -> Doc:
    main = main_terms(entry)
    tf: dict[str, float] = dict(Counter(main))
    context = analyze(entry.context) if entry.context else []
    if context:
        get = tf.get
        for term, count in Counter(context).items():
            tf[term] = get(term, 0) + CONTEXT_WEIGHT * count
    return Doc(entry, tf, len(main), len(context), normalize(entry.text) if key is None else key)
