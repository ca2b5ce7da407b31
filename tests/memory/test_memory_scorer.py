"""The compiled scorer (_scorer.c) and the packed postings it reads: the same top k as the merge
and the branch and bound, bit for bit; packs kept in step with the dict postings; hostile
arguments refused without a crash; the store still searching where it was not built."""

from __future__ import annotations

import random
from array import array
from pathlib import Path

import pytest
from test_memory_topk import _queries, _store

from nanohermes.memory import MemoryStore, packs
from nanohermes.memory import index as index_module
from nanohermes.memory.bitsets import RARE_DF
from nanohermes.memory.docs import make_doc
from nanohermes.memory.entry import Entry
from nanohermes.memory.index import Index
from nanohermes.memory.kinds import Kind
from nanohermes.memory.topk import search as branch_search

try:
    from nanohermes.memory._scorer import top_k
except ImportError:  # no C compiler at install: .ci/run insists on it, the README's command does not
    top_k = None  # type: ignore[assignment]

built = pytest.mark.skipif(top_k is None, reason="nanohermes.memory._scorer was not built (no C compiler)")


def _packs_match(index: Index) -> None:
    """Every frequent term (with bitsets) has a pack equal to its dict postings, and no other."""
    frequent = set(index.ones) | set(index.others)
    assert set(index.packed) == frequent
    for term in frequent:
        slots, tfs = index.packed[term]
        assert list(slots) == sorted(index.postings[term])
        assert list(tfs) == [float(index.postings[term][slot]) for slot in slots]


@pytest.mark.compiled_scorer
@built
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_compiled_search_equals_the_merge_and_the_branch_and_bound_bit_for_bit(seed: int) -> None:
    """Same slots, same order, the very same floats: ties of equal texts with equal or other ts,
    removed slots, tf 1, other tfs, context tfs; packed and dict postings in one query."""
    rng = random.Random(seed)
    index, _ = _store(rng, 900)
    assert index.packed
    assert any(term not in index.packed for term in index.postings)
    for terms in _queries(rng, 150):
        for k in (1, 4, 10, 32, 1000):
            ours = index.compiled_search(terms, k)
            assert ours == index.merge_search(terms, k), (terms, k)
            if k <= 32:
                assert ours == branch_search(index, terms, k), (terms, k)
    assert not any(index._scratch)


def test_packs_follow_adds_removes_and_replacements() -> None:
    """Packs appear when a term turns frequent, follow every add, remove and replacement in its
    slot, go when it is rare again, and equal the packs of an index rebuilt from scratch."""
    rng = random.Random(4)
    index, entries = _store(rng, 700)
    _packs_match(index)
    for entry in rng.sample(entries, 60):  # new text in the same slot: a pack insert mid-way
        text = f"{entry.text} deploy deploy extra{rng.randint(0, 3)}"
        index.replace(make_doc(Entry(entry.id, entry.kind, text, "", entry.ts, (), entry.context)))
    _packs_match(index)
    fresh = Index()
    fresh.rebuild(doc for doc in index.docs if doc is not None)
    _packs_match(fresh)
    for term in fresh.packed:
        slots = [fresh.docs[slot].entry.id for slot in fresh.packed[term][0]]  # type: ignore[union-attr]
        assert slots == [index.docs[slot].entry.id for slot in index.packed[term][0]]  # type: ignore[union-attr]
    for entry in entries:
        if entry.id in index.slot_of:
            index.remove(entry.id)
    assert not index.packed
    assert not index.postings


def test_a_term_leaving_and_coming_back_keeps_its_pack_in_step() -> None:
    index = Index()
    for i in range(RARE_DF + 3):
        index.add(make_doc(Entry(f"a{i}", Kind.FACT, "alpha beta" if i % 2 else "alpha alpha", "", i)))
    assert "alpha" in index.packed
    for i in range(RARE_DF):
        index.remove(f"a{i}")
        _packs_match(index)
    assert "alpha" not in index.packed
    for i in range(RARE_DF):
        index.add(make_doc(Entry(f"b{i}", Kind.FACT, "alpha gamma", "", i)))
        _packs_match(index)
    assert "alpha" in index.packed


def test_pack_put_and_take() -> None:
    held = packs.pack([(9, 1.0), (2, 0.5), (5, 2.0)])
    assert (list(held[0]), list(held[1])) == ([2, 5, 9], [0.5, 2.0, 1.0])
    packs.put(held, 7, 3.0)
    packs.put(held, 12, 1.0)
    packs.put(held, 5, 1.5)  # held already: its tf changes
    assert (list(held[0]), list(held[1])) == ([2, 5, 7, 9, 12], [0.5, 1.5, 3.0, 1.0, 1.0])
    packs.take(held, 2)
    packs.take(held, 9)
    assert (list(held[0]), list(held[1])) == ([5, 7, 12], [1.5, 3.0, 1.0])


def test_the_store_searches_the_same_without_the_compiled_scorer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no C compiler built _scorer, Index.search takes the pure-Python paths: same hits."""
    store = MemoryStore(tmp_path, max_entries=2000)
    rng = random.Random(8)
    words = ["deploy", "cache", "staging", "database", "makefile", "tabs", "python", "部署", "缓存"]
    for i in range(300):
        text = " ".join(rng.sample(words, 3)) + f" note{i}"
        store.remember("fact", text, "test", context=rng.choice(words))
    queries = ["deploy the cache", "tabs in makefiles", "staging database python", "部署缓存", "note7"]
    with_it = [[(score, entry.id) for score, entry in store.search(query, top_k=6)] for query in queries]
    monkeypatch.setattr(index_module, "compiled_top_k", None)
    other = MemoryStore(tmp_path, max_entries=2000)
    without = [[(score, entry.id) for score, entry in other.search(query, top_k=6)] for query in queries]
    assert with_it == without
    assert all(with_it)


def test_stats_say_which_scorer_searches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore(tmp_path)
    assert store.stats().compiled_scorer is (index_module.compiled_top_k is not None)
    monkeypatch.setattr(index_module, "compiled_top_k", None)
    assert store.stats().compiled_scorer is False


def _arguments(index: Index, terms: list[str]) -> list[object]:
    held = [index.packed.get(term, index.postings[term]) for term in terms]
    return [held, [1.5] * len(held), index.lengths, index.stamps, index._scratch, 0.3, 0.02, 4]


@pytest.mark.compiled_scorer
@built
@pytest.mark.parametrize(
    ("position", "value", "error"),
    [
        (0, ({1: 1.0},), TypeError),  # not a list
        (0, [[1, 2]], TypeError),  # neither a dict nor a pair
        (0, [{10**6: 1.0}], ValueError),  # slot out of range
        (0, [{-1: 1.0}], ValueError),
        (0, [{"1": 1.0}], TypeError),  # slot not an int
        (0, [{1: "x"}], TypeError),  # tf not a number
        (0, [{1: 0.0}], ValueError),  # tf not positive
        (0, [{1: float("nan")}], ValueError),
        (0, [(array("i", [1, 2]), array("d", [1.0]))], ValueError),  # lengths differ
        (0, [(array("q", [1]), array("d", [1.0]))], TypeError),  # not int32
        (0, [(array("i", [1]), b"x" * 8)], TypeError),  # not doubles
        (1, [float("inf")], ValueError),
        (1, [-1.0], ValueError),
        (1, [True], TypeError),  # a bool is not an exact int
        (2, array("f", [1.0] * 50), TypeError),
        (3, [1], ValueError),  # stamps shorter than the slots
        (4, array("d", [0.0]), ValueError),  # scratch shorter than the slots
        (4, b"\0" * 8 * 50, BufferError),  # read-only
        (5, "0.3", TypeError),
        (7, 1.5, TypeError),
    ],
)
def test_hostile_arguments_raise_and_leave_the_scratch_zeroed(
    position: int, value: object, error: type
) -> None:
    index = Index()
    index.rebuild([make_doc(Entry(f"e{i}", Kind.FACT, f"alpha beta{i % 3}", "", i)) for i in range(50)])
    index._scratch.frombytes(bytes(8 * len(index.lengths)))
    arguments = _arguments(index, ["alpha"])
    if position in (0, 1) and isinstance(value, list):
        arguments[0] = value if position == 0 else arguments[0][:1]
        arguments[1] = value if position == 1 else [1.5] * len(value)
    else:
        arguments[position] = value
    with pytest.raises(error):
        top_k(*arguments)
    assert not any(index._scratch)
    assert top_k(*_arguments(index, ["alpha"])) == top_k(*_arguments(index, ["alpha"]))


@pytest.mark.compiled_scorer
@built
def test_a_stamp_that_is_not_an_int_raises_only_when_a_tie_compares_it() -> None:
    index = Index()
    index.rebuild([make_doc(Entry(f"e{i}", Kind.FACT, "alpha beta", "", i)) for i in range(6)])
    index._scratch.frombytes(bytes(8 * len(index.lengths)))
    arguments = _arguments(index, ["alpha"])
    arguments[3] = [1, 2, "3", 4, 5, 6]  # every score is equal: ties compare the stamps
    with pytest.raises(TypeError, match="stamp"):
        top_k(*arguments)
    assert not any(index._scratch)
    arguments[3] = [10**40, 2, 10**40 + 1, 4, 5, 6]  # any size
    assert [slot for _, slot in top_k(*arguments)] == [2, 0, 5, 4]


@pytest.mark.compiled_scorer
@built
def test_wrong_argument_count_and_empty_queries() -> None:
    with pytest.raises(TypeError, match="8 arguments"):
        top_k([], [])
    scratch = array("d", [0.0])
    assert top_k([], [], array("d", [1.0]), [0], scratch, 0.3, 0.02, 4) == []
    assert top_k([{0: 1.0}], [1.0], array("d", [1.0]), [0], scratch, 0.3, 0.02, 0) == []
    assert top_k([{}], [1.0], array("d", [1.0]), [0], scratch, 0.3, 0.02, 4) == []
