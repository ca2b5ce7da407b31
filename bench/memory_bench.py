"""Memory benchmark: nanohermes BM25 search vs rank_bm25 and bm25s, and remember() with fsync.

    .venv/bin/pip install -e '.[bench]'      # rank_bm25, bm25s
    .venv/bin/python bench/memory_bench.py [--sizes 500,5000,50000] [--queries 40] [--data DIR]

For each size it writes a memory.json of realistic mixed zh/en texts (20–200 characters), then
measures, in this one run:
- warm search: median `MemoryStore.search` time while the file is unchanged (repeated queries), and
  the median of each distinct query's first run on a warm snapshot, interleaved with bm25s's first
  run of the same query terms: the whole search (analysis, the file check, scoring) and the
  scoring alone (`Index.search` on the analysed terms, as bm25s is given its tokens);
- cold search: median search time right after another session added a memory, merged into an old
  one, or added one at the cap (evicting one), after another program rewrote the file in another
  layout, and the very first search of a fresh store (parse + tokenize everything + index + query);
- the first search of a new store when memory.cache (written by an earlier full load) is there,
  as in every new process after the first: read the cache, score from its postings;
- `memory import` of as many new memories into an empty store (one write of the file per scope);
- rank_bm25 (BM25Okapi.get_scores) and bm25s (lucene, get_scores) on the same pre-tokenized corpus
  and the same query tokens, with their index built beforehand (not timed); ratios = theirs / ours.
Ours includes ranking the top 4; theirs return raw score arrays. Figures only, no assertions.

With --data (LoCoMo conversations, e.g. ../shared/data/locomo-dev) it also times a query's first run
on real memories: every turn of every conversation in one store, with its neighbouring turns as
context (as recall_bench.py stores them), each question asked once, against bm25s as above.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from nanohermes.core.fileio import atomic_write
from nanohermes.memory import INJECT_TOP_K, K1, B, MemoryStore, analyze, topk
from nanohermes.memory.bm25 import query_terms
from nanohermes.memory.docs import main_terms as doc_tokens
from nanohermes.memory.docs import make_doc
from nanohermes.memory.index import Index, compiled_top_k
from nanohermes.memory.store import NewMemory
from nanohermes.memory.transfer import import_memories, parse_import


def _words(text: str, sep: str = " ") -> list[str]:
    return text.split(sep)


ZH_SUBJECTS = _words(
    "部署脚本 前端构建 后端服务 数据库迁移 单元测试 日志系统 缓存层 配置文件 发布流程 代码评审"
)
ZH_SUBJECTS += _words("依赖升级 容器镜像 定时任务 权限模型 接口文档 监控告警")
ZH_VERBS = _words("需要先 默认会 必须 不要 尽量 总是 建议 避免 优先 记得 应该 可以")
ZH_OBJECTS = _words("运行 dry-run 检查 跑一遍 清理缓存 备份数据 用中文回复 写注释 加类型标注 提交前格式化")
ZH_OBJECTS += _words("锁定版本 重启服务 更新文档 关掉代理 开启调试")
ZH_TAILS = _words(
    "，确认无误后再执行 ，否则会失败 ，这样更稳定 ，用户明确要求过 "
    "，上次因此回滚 ，避免重复踩坑 ，以后都按这个来"
)
EN_SUBJECTS = _words(
    "the deploy script|the CI pipeline|pytest|the Docker image|the API server|ruff|mypy|the release job|"
    "the frontend build|the database migration|uv|the nginx config|GitHub Pages|the cron job|the cache layer",
    "|",
)
EN_VERBS = _words(
    "must run|should skip|always uses|never touches|needs|prefers|breaks without|depends on", "|"
)
EN_VERBS += _words("is slow without|fails on", "|")
EN_OBJECTS = _words(
    "a dry-run first|the --frozen flag|Python 3.11|port 8080|tabs in Makefiles|the staging database|"
    "short answers|type hints everywhere|a clean cache|UTC timestamps|the vendored wheel|pinned versions|"
    "the lockfile|WSL credentials|the 120 s timeout",
    "|",
)
PATHS = _words(
    "src/app/main.py ~/.ssh/config deploy/run.sh config/nginx.conf "
    "web/vite.config.ts .github/workflows/ci.yml"
)
KINDS = ["preference", "correction", "lesson", "fact"]


def make_text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.55:
            clause = rng.choice(ZH_SUBJECTS) + rng.choice(ZH_VERBS) + rng.choice(ZH_OBJECTS)
            if rng.random() < 0.4:
                clause += rng.choice(ZH_TAILS)
        else:
            clause = f"{rng.choice(EN_SUBJECTS)} {rng.choice(EN_VERBS)} {rng.choice(EN_OBJECTS)}"
        if rng.random() < 0.25:
            clause += f" ({rng.choice(PATHS)})"
        if rng.random() < 0.3:
            clause += f" #{rng.randint(1, 9999)}"  # ticket numbers, versions: a long tail of rare terms
        parts.append(clause)
    text = "；".join(parts) if rng.random() < 0.5 else ". ".join(parts)
    while len(text) < 20:
        text += " " + rng.choice(EN_OBJECTS)
    return text[:200]


def make_query(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return rng.choice(ZH_SUBJECTS) + "怎么" + rng.choice(ZH_OBJECTS)
    return f"how should {rng.choice(EN_SUBJECTS)} handle {rng.choice(EN_OBJECTS)}"


def write_store(directory: Path, texts: list[str]) -> None:
    """Write memory.json directly (a 50,000-entry file is beyond what remember() keeps)."""
    entries = [
        {"id": f"b{i:07d}", "kind": KINDS[i * 7 % 4], "text": t, "source": "bench", "ts": 1_700_000_000 + i}
        for i, t in enumerate(texts)
    ]
    directory.mkdir(parents=True, exist_ok=True)
    temp = directory / "bench.tmp"
    temp.write_text(json.dumps({"version": 1, "entries": entries}, ensure_ascii=False), encoding="utf-8")
    os.replace(temp, directory / "memory.json")


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000.0


def median_ms(fn: Callable[[], Any], repeat: int) -> float:
    return statistics.median(timed(fn) for _ in range(repeat))


def bench_size(n: int, n_queries: int, root: Path) -> dict[str, float]:
    rng = random.Random(n)
    texts = [make_text(rng) for _ in range(n)]
    queries = [make_query(rng) for _ in range(n_queries)]
    directory = root / f"n{n}"
    write_store(directory, texts)
    store = MemoryStore(directory, max_entries=10 * n)
    result: dict[str, float] = {"n": n, "first_search": timed(lambda: store.search(queries[0]))}
    model = _bm25s_model([doc_tokens(entry) for entry in store.load()])
    result.update(first_runs(store, model, list(dict.fromkeys(queries))))
    result["warm"] = statistics.median(median_ms(partial(store.search, q), 5) for q in queries)
    rounds = max(5, min(15, 150_000 // n))
    other = MemoryStore(directory, max_entries=10 * n)  # another session sharing the file
    other.remember("fact", f"another session's first fact: {make_text(rng)}", "bench")
    store.search(queries[0])  # the file is now laid out as nanohermes writes it, as in use
    cold: list[float] = []
    for round_number in range(rounds):
        other.remember("fact", f"another session's fact {round_number}: {make_text(rng)}", "bench")
        cold.append(timed(partial(store.search, queries[round_number % len(queries)])))
    result["cold"] = statistics.median(cold)
    result.update(cold_after_changes(store, other, queries, rounds, rng))
    raw = (directory / "memory.json").read_bytes()
    result["json_loads"] = median_ms(partial(json.loads, raw), 5)
    foreign: list[float] = []
    for round_number in range(rounds):
        texts[round_number] = make_text(rng)  # another program rewrote the file, one entry changed
        write_store(directory, texts)
        foreign.append(timed(partial(store.search, queries[round_number % len(queries)])))
    result["cold_foreign"] = statistics.median(foreign)
    other.remember("fact", f"laid out again as nanohermes writes it: {make_text(rng)}", "bench")
    MemoryStore(directory, max_entries=10 * n).load()  # a full load writes memory.cache
    result["fresh_cached"] = statistics.median(
        timed(partial(MemoryStore(directory, max_entries=10 * n).search, q)) for q in queries[:rounds]
    )

    entries = store.load()  # the file as the writes above left it: both sides index the same entries
    docs = [doc_tokens(entry) for entry in entries]
    query_tokens = [query_terms(analyze(q, query=True)) for q in queries]
    result.update(bench_libraries(docs, query_tokens, _bm25s_model(docs), store, queries, entries))
    return result


def cold_after_changes(
    store: MemoryStore, other: MemoryStore, queries: list[str], rounds: int, rng: random.Random
) -> dict[str, float]:
    """The first search after another session merged into an old memory (one line changed in
    place), and after it added one at the cap (one appended, one evicted)."""
    merged: list[float] = []
    for round_number in range(rounds):
        entries = store.load()
        old = entries[rng.randrange(len(entries) // 2)]
        other.remember(old.kind, old.text, "bench again")  # the same text: merged, ts refreshed
        merged.append(timed(partial(store.search, queries[round_number % len(queries)])))
    size = len(store.load())
    capped = MemoryStore(store.dir, max_entries=size)
    capped_other = MemoryStore(store.dir, max_entries=size)
    capped.search(queries[0])
    evicted: list[float] = []
    for round_number in range(rounds):
        capped_other.remember("fact", f"at the cap, fact {round_number}: {make_text(rng)}", "bench")
        evicted.append(timed(partial(capped.search, queries[round_number % len(queries)])))
    return {"cold_merged": statistics.median(merged), "cold_evicted": statistics.median(evicted)}


def _bm25s_model(docs: list[list[str]]) -> Any:
    """bm25s's index of `docs` (built untimed), or None when bm25s is not installed."""
    try:
        import bm25s
    except ImportError:
        print("  (bm25s not installed: pip install bm25s)")
        return None
    model = bm25s.BM25(k1=K1, b=B, method="lucene")
    model.index(docs, show_progress=False)
    return model


def first_runs(store: MemoryStore, model: Any, queries: list[str]) -> dict[str, float]:
    """Each distinct query's first run, interleaved query by query with bm25s's first run of the
    same query terms (get_scores + top 4) so that the machine's load weighs on both alike:
    - the whole search (`store.search` on the warm snapshot: analysis, the file check, scoring);
    - the scoring alone (`Index.search` on the analysed terms, in an index of the same entries
      built beforehand): what bm25s's figure covers. The two of ours alternate which runs first;
    - where the compiled scorer is built, also the pure-Python scoring of the same query (topk.py's
      branch and bound, what `Index.search` runs where no C compiler built _scorer).
    Only queries bm25s knows a term of count. The first query warms both up (ours ran it as the
    store's first search) and is not counted."""
    index = Index()
    index.rebuild([make_doc(entry) for entry in store.load()])
    whole: list[float] = []
    scoring: list[float] = []
    theirs: list[float] = []
    python: list[float] = []
    warm_up = [t for t in query_terms(analyze(queries[0], query=True)) if model and t in model.vocab_dict]
    if warm_up:
        _bm25s_top(model, warm_up)
    for number, query in enumerate(queries[1:]):
        terms = query_terms(analyze(query, query=True))
        known = [t for t in terms if t in model.vocab_dict] if model is not None else terms
        if not known:
            continue
        if model is not None:
            theirs.append(timed(partial(_bm25s_top, model, known)))
        runs = [(whole, partial(store.search, query)), (scoring, partial(index.search, terms, INJECT_TOP_K))]
        if compiled_top_k is not None:
            runs.append((python, partial(topk.search, index, terms, INJECT_TOP_K)))
        for times, run in runs if number % 2 else runs[::-1]:
            times.append(timed(run))
    out = {"warm_first_seen": statistics.median(whole), "scoring_first": statistics.median(scoring)}
    if python:
        out["python_first"] = statistics.median(python)
    if theirs:
        out["bm25s_first"] = statistics.median(theirs)
    return out


def _pure_python(row: dict[str, float]) -> str:
    """The pure-Python scoring's figure, where the compiled one was measured too."""
    if "python_first" not in row:
        return ""
    theirs = row.get("bm25s_first", float("nan"))
    return (
        f"; pure-Python scoring (no C compiler at install) {row['python_first']:.3f} ms "
        f"(bm25s/it: {theirs / row['python_first']:.2f})"
    )


def bench_conversations(data: Path, root: Path) -> dict[str, float]:
    """A query's first run on real memories (see the module docstring): the generated corpus
    above has no context and few distinct words, so it flatters the branch and bound."""
    from recall_bench import load_conversation  # bench/ is on sys.path when run as a script

    conversations = [load_conversation(path) for path in sorted(data.glob("*.json"))]
    memories = [
        NewMemory("fact", text, (), context)
        for conversation in conversations
        for text, context in zip(conversation.texts, conversation.contexts, strict=True)
    ]
    store = MemoryStore(root / "conversations", max_entries=len(memories) + 1)
    store.remember_many(memories, "bench")
    questions = list(dict.fromkeys(q for conversation in conversations for q, _, _ in conversation.questions))
    random.Random(0).shuffle(questions)  # conversation after conversation would repeat words
    store.search(questions[0])  # load the snapshot; the first question then warms both up
    model = _bm25s_model([doc_tokens(entry) for entry in store.load()])
    return {"n": len(store.load()), "questions": len(questions), **first_runs(store, model, questions)}


def bench_libraries(
    docs: list[list[str]],
    query_tokens: list[list[str]],
    model: Any,
    store: MemoryStore,
    queries: list[str],
    entries: list[Any],
) -> dict[str, float]:
    out: dict[str, float] = {}
    try:
        from rank_bm25 import BM25Okapi

        okapi = BM25Okapi(docs, k1=K1, b=B)
        reps = 3 if len(docs) <= 5000 else 1
        out["rank_bm25"] = statistics.median(
            median_ms(partial(okapi.get_scores, q), reps) for q in query_tokens
        )
    except ImportError:
        print("  (rank_bm25 not installed: pip install rank_bm25)")
    if model is not None:
        known = [[t for t in q if t in model.vocab_dict] for q in query_tokens]
        known = [q for q in known if q]
        out["bm25s"] = statistics.median(median_ms(partial(_bm25s_top, model, q), 5) for q in known)
        out["bm25s_max_abs_diff"] = score_difference(model, store, queries, entries)
    return out


def _bm25s_top(model: Any, tokens: list[str], k: int = 4) -> Any:
    """bm25s's scores for `tokens` and the indices of the best k (what one search needs)."""
    import numpy as np

    scores = model.get_scores(tokens)
    return np.argpartition(-scores, k)[:k]


def score_difference(model: Any, store: MemoryStore, queries: list[str], entries: list[Any]) -> float:
    """Largest |ours / (k1 + 1) − bm25s| over the top hits.

    bm25s's "lucene" variant drops the constant factor (k1 + 1) (as Lucene 8+ does; it does not change
    the ranking) and computes in float32, so ours is scaled before comparing.
    """
    index = {entry.id: i for i, entry in enumerate(entries)}
    worst = 0.0
    for query in queries[:10]:
        tokens = query_terms(analyze(query, query=True))
        if not any(t in model.vocab_dict for t in tokens):
            continue
        theirs = model.get_scores(tokens)
        for score, entry in store.search(query, top_k=10):
            worst = max(worst, abs(score / (K1 + 1.0) - float(theirs[index[entry.id]])))
    return worst


def bench_remember(root: Path, size: int, cap: int, count: int = 30) -> tuple[float, float, float]:
    """Median `remember` (new memories, fsync included) into a store of `size` entries, cap `cap`;
    the median atomic write (temp file, fsync, rename, fsync the directory) of the same bytes: the
    floor any crash-safe store of one file pays (the replaced file closed after it, see
    `_floor_write`); and the median bare `json.dumps` of the same
    document, written and fsynced in place (no rename: not crash-safe)."""
    rng = random.Random(size)
    directory = root / f"remember{size}"
    write_store(directory, [make_text(rng) for _ in range(size)])
    store = MemoryStore(directory, max_entries=cap)
    store.search("warm up")  # loaded and indexed, as in a session
    store.remember("lesson", "bench warm-up lesson: the first write also caches every entry's JSON line")
    times: list[float] = []
    floors: list[float] = []
    bares: list[float] = []
    for i in range(count):  # interleaved, so that the machine's load weighs on all three alike
        times.append(timed(partial(store.remember, "lesson", f"bench lesson {i:04d}: {make_text(rng)}")))
        data = store.path.read_bytes()
        floors.append(_floor_write(directory / "copy.json", data))
        bares.append(timed(partial(_json_write, directory / "bare.json", json.loads(data))))
    return statistics.median(times), statistics.median(floors), statistics.median(bares)


def bench_import(root: Path, size: int) -> tuple[float, float]:
    """`memory import` of `size` new memories (a JSON list) into an empty store, cap raised: its
    seconds, and one atomic write of the resulting file (ms), the floor of any crash-safe import."""
    rng = random.Random(-size)
    items = [{"kind": KINDS[i % 4], "text": f"{make_text(rng)} (import {i})"} for i in range(size)]
    parsed = parse_import(json.dumps(items, ensure_ascii=False))
    store = MemoryStore(root / f"import{size}", max_entries=10 * size)
    seconds = timed(partial(import_memories, store, parsed)) / 1000.0
    return seconds, _floor_write(root / f"import{size}.json", store.path.read_bytes())


def _floor_write(path: Path, data: bytes) -> float:
    """The time of an atomic write of `data` over `path`, with the replaced file held open until
    after it, as `remember` holds its snapshot's file: freeing the old file's blocks (on the last
    close) is then not part of the write, for both."""
    held = os.open(path, os.O_RDONLY) if path.exists() else None
    try:
        return timed(partial(atomic_write, path, data))
    finally:
        if held is not None:
            os.close(held)


def _json_write(path: Path, document: Any) -> None:
    with open(path, "w", encoding="utf-8") as file:
        file.write(json.dumps(document, ensure_ascii=False))
        file.flush()
        os.fsync(file.fileno())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="500,5000,50000")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--data", type=Path, help="LoCoMo conversations: also time real memories")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    scorer = "compiled (nanohermes/memory/_scorer.c)" if compiled_top_k else "pure Python (_scorer not built)"
    print(f"memory scorer: {scorer}", flush=True)
    with tempfile.TemporaryDirectory(prefix="nh-membench-") as tmp:
        root = Path(tmp)
        rows = []
        for n in sizes:
            print(f"measuring {n} entries …", flush=True)
            rows.append(bench_size(n, args.queries, root))
        remembers = [(500, 500, *bench_remember(root, 500, 500))]
        remembers += [(n, 10 * n, *bench_remember(root, n, 10 * n)) for n in sizes if n > 500]
        imports = [(n, *bench_import(root, n)) for n in sizes]
        real = bench_conversations(args.data, root) if args.data else None
    print()
    header = (
        f"{'entries':>8} {'warm':>9} {'warm 1st':>9} {'cold':>9} {'fresh':>9} "
        f"{'rank_bm25':>10} {'bm25s+top4':>11} {'rank/ours':>10} {'bm25s/ours':>11} {'1st: bm25s/ours':>16} "
        f"{'|Δ| bm25s':>10}"
    )
    print(header)
    print("-" * len(header))
    nan = float("nan")
    for row in rows:
        rank, fast, fast_first = row.get("rank_bm25", nan), row.get("bm25s", nan), row.get("bm25s_first", nan)
        print(
            f"{int(row['n']):>8} {row['warm']:>8.3f}ms {row['warm_first_seen']:>7.3f}ms "
            f"{row['cold']:>7.2f}ms {row['first_search']:>7.1f}ms {rank:>8.3f}ms {fast:>9.3f}ms "
            f"{rank / row['warm']:>9.1f}x {fast / row['warm']:>10.1f}x "
            f"{fast_first / row['warm_first_seen']:>15.1f}x {row.get('bm25s_max_abs_diff', nan):>10.1e}"
        )
    print()
    for row in rows:
        theirs = row.get("bm25s_first", nan)
        print(
            f"a query's first run, {int(row['n'])} entries: "
            f"the whole search {row['warm_first_seen']:.3f} ms, "
            f"the scoring alone {row['scoring_first']:.3f} ms; bm25s get_scores + top 4 {theirs:.3f} ms "
            f"(bm25s/ours: {theirs / row['warm_first_seen']:.2f} whole, "
            f"{theirs / row['scoring_first']:.2f} scoring alone){_pure_python(row)}"
        )
    if real is not None:
        theirs = real.get("bm25s_first", nan)
        print(
            f"a question's first run on real memories ({int(real['n'])} LoCoMo turns with context, "
            f"{int(real['questions'])} questions): the whole search {real['warm_first_seen']:.3f} ms, "
            f"the scoring alone {real['scoring_first']:.3f} ms; bm25s get_scores + top 4 {theirs:.3f} ms "
            f"(bm25s/ours: {theirs / real['warm_first_seen']:.2f} whole, "
            f"{theirs / real['scoring_first']:.2f} scoring alone){_pure_python(real)}"
        )
    for row in rows:
        print(
            f"cold load, {int(row['n'])} entries: {row['cold']:.2f} ms after another session wrote "
            f"(json.loads alone of that file: {row['json_loads']:.2f} ms, ratio "
            f"{row['cold'] / row['json_loads']:.2f}), {row['cold_merged']:.2f} ms after it merged "
            f"into an old memory, {row['cold_evicted']:.2f} ms after it added one at the cap (one "
            f"evicted); {row['cold_foreign']:.2f} ms after another program rewrote it in another layout"
        )
        print(
            f"first search of a new store, {int(row['n'])} entries, with memory.cache: "
            f"{row['fresh_cached']:.2f} ms "
            f"(ratio to json.loads {row['fresh_cached'] / row['json_loads']:.2f}); "
            f"without it (a file another program wrote): {row['first_search']:.1f} ms"
        )
    for size, cap, ms, floor, bare in remembers:
        print(
            f"remember() with fsync, {size} entries (cap {cap}): median {ms:.2f} ms; an atomic write "
            f"of the same bytes alone: {floor:.2f} ms (ratio {ms / floor:.2f}); json.dumps + write + "
            f"fsync of the same document: {bare:.2f} ms (ratio {ms / bare:.2f})"
        )
    for size, seconds, floor in imports:
        each = seconds * 1000.0 / size
        growth = each / (imports[0][1] * 1000.0 / imports[0][0])
        print(
            f"memory import of {size} memories into an empty store: {seconds:.2f} s ({each:.3f} ms each, "
            f"x{growth:.1f} the per-memory cost at {imports[0][0]}); "
            f"one atomic write of the result: {floor:.1f} ms"
        )
    print(
        "warm = repeated query, file unchanged (results are memoised per file version); warm 1st = a "
        "query's first run on a warm snapshot, against bm25s's first run of it (get_scores + top 4); "
        "cold = first search after another writer changed one entry of the file; fresh = first search "
        "of a new store without memory.cache (parse, analyse and index everything)."
    )


if __name__ == "__main__":
    main()
