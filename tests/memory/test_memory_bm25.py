"""BM25 equals a straightforward reference implementation to 1e-9 (SPEC §3.5)."""

from __future__ import annotations

import math
import random
from pathlib import Path

from memory_helpers import raw_entry, write_raw

from nanohermes.memory import MemoryStore, tokenize
from nanohermes.memory.bm25 import Bm25Index, top

ZH = "部署前端后端测试数据库缓存配置脚本发布上线回复中文代码注释经验偏好纠正事实日志错误版本依赖构建运行"
EN = ["deploy", "test", "cache", "build", "docker", "redis", "python", "pytest", "ruff", "uv", "node"]
EN += ["vite", "react", "django", "config", "log", "error", "ci"]
LABELS = {
    "preference": ["preference", "偏好", "preference"],
    "correction": ["correction", "纠正", "correction"],
    "lesson": ["lesson", "经验", "lesson"],
    "fact": ["fact", "事实", "fact"],
}


def reference_scores(
    docs: list[list[str]], query: list[str], k1: float = 1.2, b: float = 0.75
) -> list[float]:
    """Lucene-style BM25, written as plainly as possible."""
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    scores = []
    terms = list(dict.fromkeys(query))
    dfs = {term: sum(1 for d in docs if term in d) for term in terms}
    for doc in docs:
        total = 0.0
        for term in terms:
            df = dfs[term]
            f = doc.count(term)
            if df == 0 or f == 0:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            total += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(doc) / max(avgdl, 1)))
        scores.append(total)
    return scores


def _text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(2, 7)):
        if rng.random() < 0.5:
            start = rng.randrange(len(ZH) - 4)
            parts.append(ZH[start : start + rng.randint(1, 4)])
        else:
            parts.append(rng.choice(EN))
    return " ".join(parts) if rng.random() < 0.5 else "".join(parts)


def test_scores_match_reference_on_random_mixed_corpus(tmp_path: Path) -> None:
    rng = random.Random(20261022)
    kinds = list(LABELS)
    rows = [
        raw_entry(rng.choice(kinds), _text(rng), ts=rng.randint(1, 50), entry_id=f"e{i:04d}")
        for i in range(300)
    ]
    write_raw(tmp_path, rows)
    store = MemoryStore(tmp_path)
    entries = store.load()
    docs = [
        tokenize(e.text) + [tok for label in LABELS[e.kind.value] for tok in tokenize(label)] for e in entries
    ]
    by_id = {e.id: i for i, e in enumerate(entries)}
    checked = 0
    for _ in range(300):
        query = _text(rng) + (" " + rng.choice(["偏好", "lesson", "事实"]) if rng.random() < 0.2 else "")
        expected = reference_scores(docs, tokenize(query))
        hits = store.search(query, top_k=len(entries))
        assert len(hits) == sum(1 for s in expected if s > 0)
        for score, entry in hits:
            assert abs(score - expected[by_id[entry.id]]) < 1e-9
            checked += 1
        top4 = store.search(query, top_k=4)  # the pruned path must give the exact same top 4
        order = sorted(range(len(entries)), key=lambda i: (-expected[i], -entries[i].ts, i))
        best = [i for i in order[:4] if expected[i] > 0]
        assert [round(score, 9) for score, _ in top4] == [round(expected[i], 9) for i in best]
        assert [e.id for _, e in top4] == [entries[i].id for i in best]
        ranked = [s for s, _ in hits]
        assert ranked == sorted(ranked, reverse=True)
        if hits:
            why = store.explain(query, hits[0][1])
            assert abs(why.score - hits[0][0]) < 1e-9
            assert abs(sum(t.contribution for t in why.terms) - hits[0][0]) < 1e-9
    assert checked > 1000


def test_top_k_cut_and_zero_scores_dropped(tmp_path: Path) -> None:
    write_raw(
        tmp_path,
        [raw_entry("fact", "docker note", ts=i, entry_id=f"d{i}") for i in range(30)]
        + [raw_entry("fact", "x", 1)],
    )
    store = MemoryStore(tmp_path)
    assert len(store.search("docker", top_k=4)) == 4
    assert [e.ts for _, e in store.search("docker", top_k=3)] == [29, 28, 27]
    assert store.search("", top_k=4) == []
    assert store.search("！？", top_k=4) == []


def test_pruned_search_equals_full_scoring_on_skewed_corpus() -> None:
    rng = random.Random(99)
    common = ["the", "build", "uses", "cache"]
    docs = []
    for i in range(2000):
        doc = [rng.choice(common) for _ in range(rng.randint(2, 12))]
        if i % 97 == 0:
            doc.append(f"rare{i % 5}")
        docs.append(doc)
    index = Bm25Index(docs)
    ts = [rng.randint(0, 3) for _ in docs]
    for _ in range(200):
        terms = list(dict.fromkeys([f"rare{rng.randint(0, 6)}", *rng.sample(common, rng.randint(1, 4))]))
        k = rng.choice([1, 4, 10])
        pruned = index.search(terms, k, ts)
        full = top(index.scores(terms), k, ts)
        assert [doc for _, doc in pruned] == [doc for _, doc in full]
        assert all(abs(a - b) < 1e-9 for (a, _), (b, _) in zip(pruned, full, strict=True))


def test_pruned_search_equals_full_scoring_with_many_ties() -> None:
    """Repeated documents (equal scores), equal and distinct ts, tf > 1, k above the hit count."""
    rng = random.Random(7)
    words = ["deploy", "cache", "the", "build", "部署", "缓存", "rare"]
    shapes = [[rng.choice(words) for _ in range(rng.randint(1, 6))] for _ in range(25)]
    docs = [list(rng.choice(shapes)) for _ in range(1500)]
    ts = [rng.randint(0, 5) for _ in docs]
    index = Bm25Index(docs)
    for _ in range(300):
        terms = list(dict.fromkeys(rng.sample(words, rng.randint(1, 4))))
        k = rng.choice([1, 2, 4, 7, 16, 40])
        full = top(index.scores(terms), k, ts)
        pruned = index.search(terms, k, ts)
        assert [doc for _, doc in pruned] == [doc for _, doc in full]
        assert all(abs(a - b) < 1e-9 for (a, _), (b, _) in zip(pruned, full, strict=True))
    few = [["alpha"], ["beta", "gamma"], ["alpha", "alpha", "beta"]] + [["filler"]] * 50
    small = Bm25Index(few)
    hits = small.search(["alpha", "beta"], 10, [0] * len(few))
    assert [doc for _, doc in hits] == [doc for _, doc in top(small.scores(["alpha", "beta"]), 10, [0] * 53)]
    assert len(hits) == 3
    assert small.search(["missing"], 4, [0] * 53) == []


def test_long_query_is_exact_without_deep_recursion() -> None:
    """A pasted page is a query of hundreds of distinct terms: still the exact top k, never a
    RecursionError (one level of branch and bound per term) or a walk over every term pattern."""
    rng = random.Random(3)
    docs = [[f"w{i}", f"w{i // 3}", rng.choice(["the", "build", "cache"])] for i in range(1500)]
    index = Bm25Index(docs)
    ts = [rng.randint(0, 9) for _ in docs]
    many = [f"w{i}" for i in range(1200)] + ["cache"]
    for k, terms in [(1, many), (4, many), (16, many)] + [(4, rng.sample(many, n)) for n in (17, 30, 60)]:
        hits = index.search(terms, k, ts)
        full = top(index.scores(terms), k, ts)
        assert len(hits) == k
        assert [doc for _, doc in hits] == [doc for _, doc in full]
        assert all(abs(a - b) < 1e-9 for (a, _), (b, _) in zip(hits, full, strict=True))
