"""Retrieval (SPEC §3.5): analysis (stems, stop words), BM25F with context, the incremental index."""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path

import pytest
from memory_helpers import raw_entry, write_raw

from nanohermes.memory import (
    CONTEXT_WEIGHT,
    K1,
    MAX_CONTEXT,
    B,
    MemoryStore,
    analyze,
    render_block,
    save_distilled,
)
from nanohermes.memory.kinds import Kind
from nanohermes.memory.text import is_stop_word, stem, tokenize
from nanohermes.memory.writing import NewMemory


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Makefiles", "Makefile"),
        ("tests", "test"),
        ("deploying", "deployed"),
        ("deploy", "deploys"),
        ("painting", "painted"),
        ("drew", "draw"),
        ("went", "go"),
        ("caches", "cache"),
    ],
)
def test_inflections_fold_to_one_term(one: str, other: str) -> None:
    assert analyze(one) == analyze(other)
    assert analyze(one, query=True) == analyze(other, query=True)


def test_plural_and_tense_never_miss(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.remember("lesson", "Makefiles here need tabs, never spaces")
    store.remember("fact", "We deployed the staging server with make release")
    store.remember("fact", "The cat sleeps on the sofa")
    assert store.search("makefile indentation")[0][1].text.startswith("Makefiles")
    assert store.search("how do I deploy?")[0][1].text.startswith("We deployed")


def test_query_stop_words_are_dropped_unless_nothing_is_left() -> None:
    assert analyze("How do I deploy the app?", query=True) == ["deploy", "app"]
    assert analyze("How do I deploy the app?") == ["how", "do", "deploy", "the", "app"]
    assert analyze("what is it", query=True) == ["what", "is", "it"]  # only stop words: all of them
    # an irregular form of a function word is one too (`done` would fold to `do`, in most memories)
    assert analyze("What martial arts has John done?", query=True) == ["martial", "art", "john"]
    assert analyze("", query=True) == []


def test_chinese_function_words_and_their_bigrams_are_dropped() -> None:
    assert analyze("怎么部署", query=True) == ["么部", "部署"]
    assert analyze("我的部署了吗", query=True) == ["的部", "部署", "署了"]
    assert "怎么" not in analyze("部署前端怎么做的", query=True)
    assert analyze("的了", query=True) == ["的了"]  # nothing else: kept
    assert analyze("怎么部署") == ["怎么", "么部", "部署"]  # the index keeps everything


def test_stop_words_do_not_swamp_content_words(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.remember("fact", "how to do it: what is the plan, how did it go, what do we do now")
    store.remember("lesson", "Deploy with make release after the dry run")
    store.remember("fact", "你怎么了？是不是累了的")
    store.remember("lesson", "部署前先跑测试")
    assert store.search("how do I deploy?")[0][1].text.startswith("Deploy with")
    assert [e.text for _, e in store.search("怎么部署的")] == ["部署前先跑测试"]


def test_a_query_of_only_stop_words_still_finds_them(tmp_path: Path) -> None:
    """Nothing is left after dropping function words: the query keeps them all (both languages)."""
    store = MemoryStore(tmp_path)
    store.remember("fact", "What is it that the release job checks first")
    store.remember("lesson", "Deploy with make release after the dry run")
    store.remember("fact", "你怎么了？是不是累了")
    store.remember("lesson", "部署前先跑测试")
    found = [e.text for _, e in store.search("what is it")]
    assert found[:1] == ["What is it that the release job checks first"]
    assert [e.text for _, e in store.search("怎么了")] == ["你怎么了？是不是累了"]
    assert store.search("的了") == []  # no memory holds them: no hit rather than a random one


def reference_bm25f(docs: list[tuple[list[str], list[str]]], query: list[str]) -> list[float]:
    """BM25F written plainly: field weights multiply term frequencies and lengths."""
    n = len(docs)
    lengths = [len(main) + CONTEXT_WEIGHT * len(context) for main, context in docs]
    avgdl = sum(lengths) / n
    scores = []
    for (main, context), length in zip(docs, lengths, strict=True):
        total = 0.0
        for term in dict.fromkeys(query):
            df = sum(1 for m, c in docs if term in m or term in c)
            f = main.count(term) + CONTEXT_WEIGHT * context.count(term)
            if f:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                total += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * length / max(avgdl, 1)))
        scores.append(total)
    return scores


LABELS = {kind: analyze(kind.label("en")) + analyze(kind.label("zh")) + analyze(kind.value) for kind in Kind}
WORDS = [
    "deploy",
    "deploying",
    "release",
    "cache",
    "caches",
    "build",
    "docker",
    "tests",
    "部署",
    "上线",
    "缓存",
    "ship",
    "shipped",
    "the",
    "how",
]


def _phrase(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def test_bm25f_with_context_matches_the_reference(tmp_path: Path) -> None:
    rng = random.Random(13)
    store = MemoryStore(tmp_path, max_entries=1000)
    for i in range(120):
        context = _phrase(rng, 0, 8) if rng.random() < 0.6 else ""
        store.remember(rng.choice(list(Kind)), f"note {i} " + _phrase(rng, 1, 6), context=context)
    entries = store.load()
    docs = [(analyze(e.text) + LABELS[e.kind], analyze(e.context)) for e in entries]
    position = {e.id: i for i, e in enumerate(entries)}
    for _ in range(60):
        query = _phrase(rng, 1, 4)
        expected = reference_bm25f(docs, analyze(query, query=True))
        hits = store.search(query, top_k=len(entries))
        assert len(hits) == sum(1 for s in expected if s > 0)
        for score, entry in hits:
            assert abs(score - expected[position[entry.id]]) < 1e-9
        top4 = store.search(query, top_k=4)
        best = sorted(range(len(entries)), key=lambda i: (-expected[i], -entries[i].ts, i))[:4]
        assert [round(s, 9) for s, _ in top4] == [round(expected[i], 9) for i in best if expected[i] > 0]


def test_context_finds_the_memory_but_is_never_shown(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    secret = "sk-" + "a" * 40
    said = f"how do we ship it to production? my key is {secret} " + "more words " * 80
    store.remember("lesson", "Deploy with `make release` from a clean tree", context=said)
    store.remember("fact", "The office plant needs water on Mondays")
    entry = store.search("ship to production")[0][1]
    assert entry.text == "Deploy with `make release` from a clean tree"
    assert len(entry.context) <= MAX_CONTEXT
    assert "ship" in entry.context
    assert secret not in entry.context
    assert "[REDACTED]" in entry.context
    block = store.retrieve_block("ship to production")
    assert "make release" in block
    assert "ship" not in block
    assert "production" not in block
    assert render_block([entry]) == block
    stored = json.loads(store.path.read_text(encoding="utf-8"))["entries"]
    assert secret not in store.path.read_text(encoding="utf-8")
    assert "context" in stored[0]
    assert "context" not in stored[1]


def test_context_weighs_less_than_the_text(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.remember("fact", "The release needs a signed tag", context="talking about docker today")
    store.remember("fact", "Docker images are built nightly", context="talking about the release")
    assert [e.text for _, e in store.search("docker")][0] == "Docker images are built nightly"


def test_distillation_stores_the_user_message_as_context(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    items = [NewMemory(Kind.PREFERENCE, "Answer in short bullet points")]
    assert save_distilled(store, items, context="please keep replies terse, I read them on my phone") == 1
    assert store.load()[0].context == "please keep replies terse, I read them on my phone"
    assert store.search("phone")[0][1].text == "Answer in short bullet points"


def test_legacy_file_without_context_loads_and_stays_without_it(tmp_path: Path) -> None:
    write_raw(tmp_path, [raw_entry("lesson", "Run ruff before committing", 5, "aaaa1111")], version=None)
    store = MemoryStore(tmp_path)
    (entry,) = store.load()
    assert entry.context == ""
    assert entry.id == "aaaa1111"
    assert store.search("running ruff")[0][1] == entry
    store.remember("fact", "The CI runs on Linux", context="where does CI run?")
    data = json.loads(store.path.read_text(encoding="utf-8"))
    assert "context" not in data["entries"][0]
    assert data["entries"][1]["context"] == "where does CI run?"


def test_a_duplicate_keeps_the_newer_context_or_the_old_one(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.remember("fact", "Use pnpm, not npm", context="which package manager?")
    assert not store.remember("fact", "use pnpm, not npm")
    assert store.load()[0].context == "which package manager?"
    assert not store.remember("fact", "Use pnpm, not npm", context="how do I install deps")
    assert store.load()[0].context == "how do I install deps"


def test_incremental_index_equals_a_fresh_one(tmp_path: Path) -> None:
    """Appends, merges, evictions and forgets update the index in place; a new store reading the
    same file from scratch ranks exactly alike."""
    rng = random.Random(21)
    store = MemoryStore(tmp_path, max_entries=60)
    for i in range(150):
        kind = rng.choice(list(Kind))
        store.remember(kind, f"{_phrase(rng, 1, 5)} item{i % 90}", context=_phrase(rng, 0, 4))
        if i % 7 == 0:
            store.search("deploy cache")
        if i % 11 == 0 and len(store):
            store.forget(rng.choice(store.load()).id)
    fresh = MemoryStore(tmp_path, max_entries=60)
    for query in ["deploy", "cache the build", "部署 上线", "ship", "item5", "tests shipped"]:
        ours = [(round(s, 9), e.id) for s, e in store.search(query, top_k=10)]
        assert ours == [(round(s, 9), e.id) for s, e in fresh.search(query, top_k=10)]


def test_another_session_s_writes_and_hand_edits_are_seen(tmp_path: Path) -> None:
    first, second = MemoryStore(tmp_path), MemoryStore(tmp_path)
    first.remember("fact", "The API lives in services/api")
    assert first.search("api")
    second.remember("lesson", "Restart the worker after editing the queue config")
    assert first.search("queue worker")[0][1].text.startswith("Restart the worker")
    text = first.path.read_text(encoding="utf-8").replace("services/api", "services/gateway")
    first.path.write_text(text, encoding="utf-8")
    assert first.search("gateway")[0][1].text == "The API lives in services/gateway"
    assert not first.search("services api gateway")[0][1].text.endswith("services/api")


def test_a_refreshed_duplicate_is_what_search_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A duplicate refreshes an entry's ts and source without changing its terms: a search after it
    returns the new entry, ordered by its new ts among equal scores."""
    store = MemoryStore(tmp_path)
    monkeypatch.setattr(time, "time", lambda: 5.0)
    store.remember("fact", "deploy cache", source="auto")
    store.remember("fact", "cache deploy", source="auto")
    assert [e.text for _, e in store.search("deploy")] == ["deploy cache", "cache deploy"]  # earlier first
    monkeypatch.setattr(time, "time", lambda: 9.0)
    assert not store.remember("fact", "cache deploy", source="user")
    hits = store.search("deploy")
    assert [(e.text, e.ts, e.source) for _, e in hits] == [
        ("cache deploy", 9, "user"),
        ("deploy cache", 5, "auto"),
    ]
    assert hits[0][0] == hits[1][0]


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
