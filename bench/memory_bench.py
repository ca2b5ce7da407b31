"""Memory benchmark: the figures a user can feel, each against a baseline measured in the same run.

    .venv/bin/pip install -e '.[bench]'      # rank_bm25, bm25s (optional baselines)
    .venv/bin/python bench/memory_bench.py [--sizes 500,5000] [--queries 40]

For each size it writes a memory.json of realistic mixed zh/en texts (20–200 characters) and
measures, in this one run:
- search: the median of each distinct query's first run on a loaded store (analysis, the file
  check, scoring, top 4), and of a repeated query; against bm25s (get_scores + top 4) and rank_bm25
  (get_scores) on the same terms, their index built beforehand (not timed). Target: ≤ 2 ms at 5,000.
- first search: a new store's first search (read, parse, analyse and index every entry, then the
  query) in this process and in a new one (after its import of nanohermes.memory), against
  `json.loads` of the same file. Target: ≤ 300 ms at 5,000.
- after another session wrote: the first search once another store added a memory to the file.
- remember: the median `remember` (new memories, fsync included) against an atomic write (temp
  file, fsync, rename, fsync the directory) of the same bytes, interleaved. Target: ≤ 3×.
- import: `memory import` of as many new memories into an empty store (one write of the file), per
  memory, against the smallest size: about linear.
- usage tracking (issue 34): a turn's recall (its memories noted as used) and the next `remember`
  (which writes the noted uses), against a store whose `note_used` does nothing, interleaved.
  Target: within 10 %.
Figures only, no assertions.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from nanohermes.core.fileio import atomic_write
from nanohermes.memory import K1, B, MemoryStore, analyze, recall_for_turn
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
    "，确认无误后再执行 ，否则会失败 ，这样更稳定 ，用户明确要求过 ，上次因此回滚 ，避免重复踩坑"
)
EN_SUBJECTS = _words(
    "the deploy script|the CI pipeline|pytest|the Docker image|the API server|ruff|mypy|the release job|"
    "the frontend build|the database migration|uv|the nginx config|GitHub Pages|the cron job|the cache layer",
    "|",
)
EN_VERBS = _words("must run|should skip|always uses|never touches|needs|prefers|breaks without", "|")
EN_VERBS += ["depends on", "is slow without", "fails on"]
EN_OBJECTS = _words(
    "a dry-run first|the --frozen flag|Python 3.11|port 8080|tabs in Makefiles|the staging database|"
    "short answers|type hints everywhere|a clean cache|UTC timestamps|the vendored wheel|pinned versions|"
    "the lockfile|WSL credentials|the 120 s timeout",
    "|",
)
PATHS = _words("src/app/main.py ~/.ssh/config deploy/run.sh config/nginx.conf web/vite.config.ts")
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
    """memory.json as another program would write it (then read as any file is)."""
    entries = [
        {"id": f"b{i:07d}", "kind": KINDS[i * 7 % 4], "text": t, "source": "bench", "ts": 1_700_000_000 + i}
        for i, t in enumerate(texts)
    ]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "memory.json").write_text(json.dumps({"version": 1, "entries": entries}, ensure_ascii=False))


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000.0


def median_ms(fn: Callable[[], Any], repeat: int) -> float:
    return statistics.median(timed(fn) for _ in range(repeat))


NEW_PROCESS = """
import json, sys, time
start = time.perf_counter()
from nanohermes.memory import MemoryStore
imported = time.perf_counter()
MemoryStore(sys.argv[1], max_entries=10**6).search(sys.argv[2])
print(json.dumps([(imported - start) * 1000, (time.perf_counter() - imported) * 1000]))
"""


def new_process(directory: Path, query: str, repeat: int = 5) -> tuple[float, float]:
    """In a new process (median of `repeat`): importing nanohermes.memory, and the first search
    (read, parse, analyse and index every entry, then the query)."""
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", NEW_PROCESS, str(directory), query],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for _ in range(repeat)
    ]
    return statistics.median(run[0] for run in runs), statistics.median(run[1] for run in runs)


def bench_size(n: int, n_queries: int, root: Path) -> dict[str, float]:
    rng = random.Random(n)
    directory = root / f"n{n}"
    write_store(directory, [make_text(rng) for _ in range(n)])
    queries = list(dict.fromkeys(make_query(rng) for _ in range(n_queries)))
    store = MemoryStore(directory, max_entries=10 * n)
    row: dict[str, float] = {"n": n, "fresh": timed(partial(store.search, queries[0]))}
    row["json_loads"] = median_ms(partial(json.loads, (directory / "memory.json").read_bytes()), 5)
    row["import"], row["fresh_process"] = new_process(directory, queries[0])
    store.remember("fact", f"laid out as nanohermes writes it: {make_text(rng)}", "bench")
    row["first_run"] = statistics.median(timed(partial(store.search, q)) for q in queries[1:])
    row["repeated"] = statistics.median(median_ms(partial(store.search, q), 5) for q in queries)
    other = MemoryStore(directory, max_entries=10 * n)
    after: list[float] = []
    for i in range(5):
        other.remember("fact", f"another session's fact {i}: {make_text(rng)}", "bench")
        after.append(timed(partial(store.search, queries[i % len(queries)])))
    row["after_other"] = statistics.median(after)
    row.update(libraries(store, queries))
    return row


def libraries(store: MemoryStore, queries: list[str]) -> dict[str, float]:
    """bm25s and rank_bm25 on the same documents (text, keys and the kind's labels; no context)
    and query terms."""
    docs = [
        analyze(" ".join([e.text, *e.keys, e.kind.label("en"), e.kind.label("zh"), e.kind]))
        for e in store.load()
    ]
    terms = [list(dict.fromkeys(analyze(q, query=True))) for q in queries]
    out: dict[str, float] = {}
    try:
        import bm25s
        import numpy as np

        model = bm25s.BM25(k1=K1, b=B, method="lucene")
        model.index(docs, show_progress=False)
        known = [[t for t in q if t in model.vocab_dict] for q in terms]
        top4 = partial(lambda q: np.argpartition(-model.get_scores(q), 4)[:4])
        out["bm25s"] = statistics.median(timed(partial(top4, q)) for q in known if q)
    except ImportError:
        print("  (bm25s not installed: pip install bm25s)")
    try:
        from rank_bm25 import BM25Okapi

        okapi = BM25Okapi(docs, k1=K1, b=B)
        out["rank_bm25"] = statistics.median(timed(partial(okapi.get_scores, q)) for q in terms)
    except ImportError:
        print("  (rank_bm25 not installed: pip install rank_bm25)")
    return out


def bench_remember(root: Path, size: int, count: int = 30) -> tuple[float, float]:
    """Median `remember` into a store of `size` entries (no eviction), and the median atomic write
    of the same bytes over a file of the same size, interleaved so the machine's load weighs alike."""
    rng = random.Random(-size)
    directory = root / f"remember{size}"
    write_store(directory, [make_text(rng) for _ in range(size)])
    store = MemoryStore(directory, max_entries=10 * size)
    store.search("warm up")
    store.remember("lesson", "bench warm-up: the first write makes every entry's JSON line")
    ours: list[float] = []
    floor: list[float] = []
    copy = directory / "copy.json"
    for i in range(count):
        ours.append(timed(partial(store.remember, "lesson", f"bench lesson {i:04d}: {make_text(rng)}")))
        data = store.path.read_bytes()
        copy.write_bytes(data)
        floor.append(timed(partial(atomic_write, copy, data)))
    return statistics.median(ours), statistics.median(floor)


class Untracked(MemoryStore):
    """The store without usage tracking: the baseline of `bench_usage`."""

    def note_used(self, ids: Iterable[str]) -> None:
        del ids


def bench_usage(root: Path, size: int, count: int = 60) -> dict[str, tuple[float, float]]:
    """Median ms of a turn's recall and of the `remember` after it, with usage tracking and without
    (which goes first alternates: an fsync slows the write after it)."""
    rng = random.Random(size + 1)
    texts = [make_text(rng) for _ in range(size)]
    stores: dict[str, MemoryStore] = {}
    for name, kind in (("tracked", MemoryStore), ("untracked", Untracked)):
        write_store(root / f"usage-{name}{size}", texts)
        stores[name] = kind(root / f"usage-{name}{size}", max_entries=10 * size)
        stores[name].remember("lesson", "bench warm-up: the first write makes every entry's JSON line")
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in stores}
    for i in range(count):
        query, text = make_query(rng), f"usage lesson {i:04d}: {make_text(rng)}"
        for name, store in sorted(stores.items(), reverse=i % 2 == 1):
            times[name][0].append(timed(partial(recall_for_turn, store, query, "")))
            times[name][1].append(timed(partial(store.remember, "lesson", text)))
    return {name: (statistics.median(turn), statistics.median(rem)) for name, (turn, rem) in times.items()}


def bench_import(root: Path, size: int) -> float:
    """Seconds to import `size` new memories (a JSON list) into an empty store, cap raised."""
    rng = random.Random(size)
    items = [{"kind": KINDS[i % 4], "text": f"{make_text(rng)} (import {i})"} for i in range(size)]
    parsed = parse_import(json.dumps(items, ensure_ascii=False))
    store = MemoryStore(root / f"import{size}", max_entries=10 * size)
    return timed(partial(import_memories, store, parsed)) / 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="500,5000")
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="nh-membench-") as tmp:
        root = Path(tmp)
        rows = []
        for n in sizes:
            print(f"measuring {n} entries …", flush=True)
            rows.append(bench_size(n, args.queries, root))
        remembers = [(n, *bench_remember(root, n)) for n in sizes]
        imports = [(n, bench_import(root, n)) for n in sizes]
        usage = [(n, bench_usage(root, n)) for n in sizes]
    nan = float("nan")
    for row in rows:
        n, first = int(row["n"]), row["first_run"]
        theirs, okapi = row.get("bm25s", nan), row.get("rank_bm25", nan)
        print(
            f"\n{n} memories\n"
            f"  search, a query's first run: {first:.3f} ms (repeated: {row['repeated']:.3f} ms); "
            f"bm25s get_scores + top 4 {theirs:.3f} ms (ours/bm25s {first / theirs:.2f}), "
            f"rank_bm25 get_scores {okapi:.3f} ms (ours/rank_bm25 {first / okapi:.2f})\n"
            f"  first search of a new store: {row['fresh']:.1f} ms (json.loads of the file alone "
            f"{row['json_loads']:.1f} ms, ratio {row['fresh'] / row['json_loads']:.1f}); in a new process "
            f"{row['fresh_process']:.1f} ms (ratio {row['fresh_process'] / row['json_loads']:.1f}), after "
            f"importing nanohermes.memory ({row['import']:.0f} ms, paid at start-up)\n"
            f"  first search after another session wrote: {row['after_other']:.1f} ms"
        )
    print()
    for size, ours, floor in remembers:
        print(
            f"remember() with fsync, {size} memories: {ours:.2f} ms; an atomic write of the same bytes "
            f"{floor:.2f} ms (ratio {ours / floor:.2f})"
        )
    for size, found in usage:
        (turn, rem), (bare_turn, bare_rem) = found["tracked"], found["untracked"]
        print(
            f"usage tracking, {size} memories: a turn's recall {turn:.3f} ms, without {bare_turn:.3f} ms "
            f"(ratio {turn / bare_turn:.3f}); the next remember {rem:.2f} ms, without {bare_rem:.2f} ms "
            f"(ratio {rem / bare_rem:.3f})"
        )
    base = imports[0][1] / imports[0][0]
    for size, seconds in imports:
        print(
            f"memory import of {size} memories into an empty store: {seconds:.2f} s "
            f"({seconds * 1000 / size:.3f} ms each, x{seconds / size / base:.2f} the cost each at "
            f"{imports[0][0]})"
        )


if __name__ == "__main__":
    main()
