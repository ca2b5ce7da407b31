"""The exact top k of topk.py (branch and bound) against the full merge, bit for bit, the length
buckets the index keeps for it, and a query's analysis."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from memory_helpers import raw_entry, write_raw

from nanohermes.memory import MemoryStore
from nanohermes.memory.analysis import analyze, is_stop_word, stem
from nanohermes.memory.bitsets import RARE_DF, Buckets, bucket_floor, bucket_of
from nanohermes.memory.docs import Doc, make_doc
from nanohermes.memory.entry import Entry
from nanohermes.memory.index import Index
from nanohermes.memory.kinds import Kind
from nanohermes.memory.text import tokenize
from nanohermes.memory.topk import search as branch_search

COMMON = ["deploy", "build", "cache", "test", "部署", "缓存", "release"]


def _entry(rng: random.Random, i: int, ts: int) -> Entry:
    """Texts drawn from few words (many exact ties), repeated words (tf 2, 3), context (tf 0.5,
    1.5), rare words, and copies of earlier texts with the same or another ts."""
    words = rng.sample(COMMON, rng.randint(1, 4))
    words += [rng.choice(COMMON) for _ in range(rng.choice([0, 0, 0, 2]))]
    words += [f"filler{rng.randint(0, 300)}" for _ in range(rng.randint(0, 12))]
    if rng.random() < 0.3:
        words.append(f"rare{rng.randint(0, 60)}")
    context = " ".join(rng.choice(COMMON) for _ in range(rng.choice([0, 0, 0, 0, 1, 3])))
    return Entry(f"e{i}", rng.choice(list(Kind)), " ".join(words), "", ts, (), context)


def _store(rng: random.Random, size: int) -> tuple[Index, list[Entry]]:
    """An index built entry by entry, with removals and replaced entries along the way."""
    index = Index()
    entries: list[Entry] = []
    for i in range(size):
        if entries and rng.random() < 0.25:  # a copy of an earlier text: an exact tie
            old = rng.choice(entries)
            ts = old.ts if rng.random() < 0.5 else rng.randint(0, 9)
            entry = Entry(f"e{i}", old.kind, old.text, "", ts, (), old.context)
        else:
            entry = _entry(rng, i, rng.randint(0, 9))
        index.add(make_doc(entry))
        entries.append(entry)
        if rng.random() < 0.15:
            gone = entries.pop(rng.randrange(len(entries)))
            index.remove(gone.id)
    return index, entries


def _queries(rng: random.Random, count: int) -> list[list[str]]:
    vocabulary = [*COMMON, "fact", "lesson", "missing", "rare3", "rare7"]
    return [list(dict.fromkeys(rng.choices(vocabulary, k=rng.randint(1, 7)))) for _ in range(count)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_branch_and_bound_equals_the_merge_bit_for_bit(seed: int) -> None:
    """Same slots in the same order and the very same floats: ties (equal texts, equal or other
    ts) fall the same way, over removed slots, tf 1, other tfs and context tfs."""
    rng = random.Random(seed)
    index, _ = _store(rng, 900)
    assert index.ones
    assert index.others
    for terms in _queries(rng, 150):
        for k in (1, 4, 10, 32):
            assert branch_search(index, terms, k) == index.merge_search(terms, k), (terms, k)


def test_search_after_updates_equals_a_rebuilt_index() -> None:
    """The buckets and bitsets kept up to date by add, remove and replace rank exactly as the
    ones a rebuild makes in one pass."""
    rng = random.Random(5)
    index, entries = _store(rng, 600)
    for entry in rng.sample(entries, 40):  # same document, newer ts: scores equal, ties move
        index.replace(make_doc(Entry(entry.id, entry.kind, entry.text, "", 50, (), entry.context)))
    fresh = Index()
    fresh.rebuild(doc for doc in index.docs if doc is not None)
    by_id = {doc.entry.id: doc for doc in fresh.docs if doc is not None}
    for terms in _queries(rng, 120):
        ours = [(score, index.docs[slot]) for score, slot in branch_search(index, terms, 4)]
        theirs = [(score, fresh.docs[slot]) for score, slot in branch_search(fresh, terms, 4)]
        assert [(s, d.entry.id if d else None) for s, d in ours] == [
            (s, d.entry.id if d else None) for s, d in theirs
        ]
        assert all(d is not None and by_id[d.entry.id].tf == d.tf for _, d in ours)


def test_a_term_turning_frequent_and_rare_again_keeps_results_exact() -> None:
    """Bitsets appear past RARE_DF holders and go again (with hysteresis) as entries leave."""
    index = Index()
    for i in range(RARE_DF + 5):
        index.add(make_doc(Entry(f"a{i}", Kind.FACT, "alpha beta" if i % 3 else "alpha alpha", "", i)))
        index.add(make_doc(Entry(f"b{i}", Kind.FACT, "beta gamma", "", i)))
    assert "alpha" in index.ones
    assert "alpha" in index.others
    for i in range(RARE_DF):
        index.remove(f"a{i}")
        for terms in (["alpha"], ["alpha", "beta"], ["gamma", "alpha"]):
            assert branch_search(index, terms, 4) == index.merge_search(terms, 4)
    assert "alpha" not in index.ones
    assert "alpha" not in index.others


def test_a_replaced_document_keeps_its_slot_and_its_place_among_equal_scores() -> None:
    """A merge that changes an entry's text leaves it where it is in the file: it keeps its slot,
    so equal scores still fall by file order, as in an index built afresh."""
    entries = [Entry(f"e{i}", Kind.FACT, f"deploy cache note{i}", "", 7) for i in range(6)]
    index = Index()
    for entry in entries:
        index.add(make_doc(entry))
    changed = Entry("e2", Kind.FACT, "deploy cache other", "", 7)  # same length, same query tfs
    index.replace(make_doc(changed))
    assert index.slot_of["e2"] == 2
    fresh = Index()
    fresh.rebuild([make_doc(entry) for entry in [*entries[:2], changed, *entries[3:]]])
    for terms in (analyze("deploy cache"), analyze("cache")):
        ours = [index.docs[slot].entry.id for _, slot in branch_search(index, terms, 10)]  # type: ignore[union-attr]
        theirs = [fresh.docs[slot].entry.id for _, slot in branch_search(fresh, terms, 10)]  # type: ignore[union-attr]
        assert ours == theirs == ["e0", "e1", "e2", "e3", "e4", "e5"]
        assert index.merge_search(terms, 10) == branch_search(index, terms, 10)


def test_a_refreshed_entry_is_what_a_memoised_search_returns() -> None:
    """A duplicate refreshes an entry's ts and source without changing its terms: a search
    memoised before returns the new entry, ordered by its new ts among equal scores."""
    index = Index()
    index.add(make_doc(Entry("a", Kind.FACT, "deploy cache", "auto", 5)))
    old = make_doc(Entry("b", Kind.FACT, "deploy cache", "auto", 5))
    index.add(old)
    assert [doc.entry.id for _, doc in index.search(analyze("deploy"), 4)] == ["a", "b"]  # earlier first
    refreshed = Entry("b", Kind.FACT, "deploy cache", "user", 9)
    index.replace(Doc(refreshed, old.tf, old.main_len, old.context_len, old.key))
    hits = index.search(analyze("deploy"), 4)
    assert [doc.entry for _, doc in hits] == [refreshed, index.docs[0].entry]  # type: ignore[union-attr]


def _check(buckets: Buckets, lengths: dict[int, float]) -> None:
    assert buckets.keys == sorted({bucket_of(length) for length in lengths.values()})
    assert buckets.floors == [bucket_floor(bucket) for bucket in buckets.keys]
    union = 0
    for position, bucket in enumerate(buckets.keys):
        slots = {slot for slot, length in lengths.items() if bucket_of(length) == bucket}
        assert buckets.bits[bucket] == sum(1 << slot for slot in slots)
        union |= buckets.bits[bucket]
        assert buckets.shorter[position] == union
    assert set(buckets.bits) == set(buckets.keys)


def test_length_buckets_follow_adds_and_removes() -> None:
    rng = random.Random(9)
    buckets = Buckets()
    lengths: dict[int, float] = {}
    for slot in range(400):
        lengths[slot] = rng.choice([0.5, 1, 2, 3.5, 7, 20, 90, 400]) + rng.randint(0, 3)
        buckets.add(slot, lengths[slot])
        if rng.random() < 0.4:
            gone = rng.choice(list(lengths))
            buckets.remove(gone, lengths.pop(gone))
        _check(buckets, lengths)
    built = Buckets.build([lengths[slot] for slot in sorted(lengths)])
    _check(built, dict(enumerate(lengths[slot] for slot in sorted(lengths))))
    for slot in list(lengths):
        buckets.remove(slot, lengths.pop(slot))
    _check(buckets, lengths)
    assert buckets.keys == []
    assert buckets.shorter == []


def test_patterns_of_tf_1_are_cut_by_length_exactly() -> None:
    """Every tf 1: long entries hold both query terms, short ones only the rarer: a short entry
    lacking the common term can outscore a long one holding both, so the cut by length bucket
    alone decides which entries of the second pattern are scored."""
    rng = random.Random(11)
    index = Index()
    for i in range(1200):
        if i % 3 == 0:
            words = ["alpha", "zeta", *(f"filler{j}" for j in rng.sample(range(400), rng.randint(20, 60)))]
        elif i % 3 == 1:
            words = ["alpha", *(f"filler{j}" for j in rng.sample(range(400), rng.randint(0, 25)))]
        else:
            words = ["zeta", *(f"filler{j}" for j in rng.sample(range(400), rng.randint(0, 40)))]
        rng.shuffle(words)
        index.add(make_doc(Entry(f"e{i}", Kind.FACT, " ".join(words), "", rng.randint(0, 3))))
    for terms in (["alpha", "zeta"], ["zeta", "alpha"], ["alpha"], ["alpha", "zeta", "filler7"]):
        for k in range(1, 40):
            assert branch_search(index, terms, k) == index.merge_search(terms, k), (terms, k)


def test_a_huge_ts_in_a_hand_edited_file_still_ranks(tmp_path: Path) -> None:
    """ts of any size (a hand edit, a float) orders ties without overflowing anything."""
    entries = [
        raw_entry("fact", "deploy script runs", 10**40, "a1"),
        raw_entry("fact", "deploy script runs", 5, "a2"),
        raw_entry("fact", "deploy script runs", 10**40 + 1, "a3"),
    ]
    write_raw(tmp_path, entries)
    hits = MemoryStore(tmp_path).search("deploy", top_k=3)
    assert [entry.id for _, entry in hits] == ["a3", "a1", "a2"]
    assert len({score for score, _ in hits}) == 1


@pytest.mark.parametrize(
    "text",
    ["how should the deploy script handle it", "the of and", "缓存层怎么运行", "的了", "", "Makefiles ran"],
)
def test_query_analysis_keeps_content_words_or_else_everything(text: str) -> None:
    tokens = tokenize(text)
    content = [token for token in tokens if not is_stop_word(token)]
    assert analyze(text, query=True) == [stem(token) for token in content or tokens]
