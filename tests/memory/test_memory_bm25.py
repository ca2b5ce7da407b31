"""BM25 equals a straightforward reference implementation to 1e-9 (SPEC §3.5)."""

from __future__ import annotations

import math
import random
from pathlib import Path

from memory_helpers import raw_entry, write_raw

from nanohermes.memory import K1, B, MemoryStore, analyze

ZH = "部署前端后端测试数据库缓存配置脚本发布上线回复中文代码注释经验偏好纠正事实日志错误版本依赖构建运行"
EN = ["deploy", "test", "cache", "build", "docker", "redis", "python", "pytest", "ruff", "uv", "node"]
EN += ["vite", "react", "django", "config", "log", "error", "ci"]
LABELS = {
    "preference": ["preference", "偏好", "preference"],
    "correction": ["correction", "纠正", "correction"],
    "lesson": ["lesson", "经验", "lesson"],
    "fact": ["fact", "事实", "fact"],
}


def reference_scores(docs: list[list[str]], query: list[str], k1: float = K1, b: float = B) -> list[float]:
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
        analyze(e.text) + [tok for label in LABELS[e.kind.value] for tok in analyze(label)] for e in entries
    ]
    by_id = {e.id: i for i, e in enumerate(entries)}
    checked = 0
    for _ in range(300):
        query = _text(rng) + (" " + rng.choice(["偏好", "lesson", "事实"]) if rng.random() < 0.2 else "")
        expected = reference_scores(docs, analyze(query, query=True))
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
