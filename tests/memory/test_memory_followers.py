"""Stores that follow one file: whatever another session or another program did to it, a store that
was open before (through its in-place updates) and a new process's first search
answer exactly as a store opened afresh on the file."""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import pytest
from memory_helpers import raw_entry, write_raw

from nanohermes.memory import MemoryStore
from nanohermes.memory.entry import Entry

WORDS = [
    *("deploy", "script", "pytest", "ruff", "docker", "staging", "nginx", "cache", "port", "8080"),
    *("uv", "lockfile", "部署", "脚本", "测试", "缓存"),
]
_SEPARATOR = b",\n    "
Hits = list[list[tuple[float, str]]]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))) + f" {rng.randint(0, 40)}"


def _replace(path: Path, data: bytes) -> None:
    """Another program's write: a new file renamed into place."""
    temp = path.with_name("foreign.tmp")
    temp.write_bytes(data)
    os.replace(temp, path)


def _line(item: dict[str, object]) -> bytes:
    return json.dumps(item, ensure_ascii=False).encode()


def _edit_lines(rng: random.Random, lines: list[bytes]) -> str:
    """One edit of the entry lines, as another program might make it; its name."""
    i = rng.randrange(len(lines))
    item = json.loads(lines[i])
    edit = rng.choice(["text", "ts", "remove", "copy", "swap", "id", "kind", "append", "two"])
    if edit == "text":
        lines[i] = _line({**item, "text": _text(rng)})
    elif edit == "ts":
        lines[i] = _line({**item, "ts": item["ts"] + rng.randint(1, 100)})
    elif edit == "remove":
        del lines[i]
    elif edit == "copy":  # the same id twice
        lines.insert(rng.randrange(len(lines) + 1), lines[i])
    elif edit == "swap":
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif edit == "id":
        lines[i] = _line({**item, "id": f"x{rng.randrange(10**6)}"})
    elif edit == "kind":
        lines[i] = _line({**item, "kind": rng.choice(["fact", "lesson", "a-newer-kind"])})
    elif edit == "append":
        lines.append(_line({"id": f"a{rng.randrange(10**6)}", "kind": "fact", "text": _text(rng), "ts": 5}))
    else:
        lines[i] = _line({**item, "text": _text(rng)})
        j = rng.randrange(len(lines))
        lines[j] = _line({**json.loads(lines[j]), "text": _text(rng)})
    return edit


def _foreign_edit(path: Path, rng: random.Random) -> str:
    """Edit memory.json as another program would: one entry line changed, removed, copied, moved
    or added in place, or the whole document written again in another layout."""
    if not path.exists():
        return "none"
    raw = path.read_bytes()
    start, end = raw.find(b"[\n    "), raw.rfind(b"\n  ]")
    if start < 0 or end < start:
        return "none"
    if rng.random() < 0.1:
        document = json.loads(raw)
        _replace(path, json.dumps(document, indent=rng.choice([None, 2]), ensure_ascii=False).encode())
        return "layout"
    lines = raw[start + 6 : end].split(_SEPARATOR)
    try:
        for line in lines:
            json.loads(line)
    except ValueError:
        return "none"  # not one entry per line (another layout): left as it is
    edit = _edit_lines(rng, lines)
    if lines:
        _replace(path, raw[: start + 6] + _SEPARATOR.join(lines) + raw[end:])
    return edit


def _seen(store: MemoryStore, queries: list[str]) -> tuple[list[Entry], Hits]:
    entries = store.load()
    return entries, [[(score, entry.id) for score, entry in store.search(q, 4)] for q in queries]


def _step(
    rng: random.Random, path: Path, writer: MemoryStore, reader: MemoryStore, queries: list[str]
) -> str:
    """One random step: a write by either store, a foreign edit or a search; its name."""
    roll = rng.random()
    if roll < 0.45:
        who = writer if rng.random() < 0.7 else reader
        scope = rng.choice([None, "global", "project"])
        who.remember(rng.choice(["fact", "lesson", "preference"]), _text(rng), "test", scope=scope)
        return "remember"
    if roll < 0.6:
        entries = writer.load()
        if not entries:
            return "none"
        entry = rng.choice(entries)
        if rng.random() < 0.5:
            writer.forget(entry.id)
            return "forget"
        # A duplicate: merged, ts refreshed; re-learnt from another project, it becomes global.
        who = writer if rng.random() < 0.7 else reader
        who.remember(entry.kind, entry.text, "again")
        return "merge"
    if roll < 0.8:
        return _foreign_edit(path, rng)
    reader.search(rng.choice(queries))
    return "search"


RUNS = [(seed, cap, bulk) for seed in (2, 3, 5) for cap, bulk in ((5, 0), (12, 0), (40, 0), (300, 80))]
"""Seeds, caps (evictions at 5, 12 and 40) and entries written first."""


def _follow_a_random_run(
    path: Path, seed: int, cap: int, bulk: int, projects: tuple[str | None, str | None]
) -> None:
    """A random run of writes (adds, merges, forgets, evictions at the cap) by a writer and a
    reader opened for `projects`, and foreign edits: after every step each of them, and a new
    process's first search for its project, returns
    what a store opened afresh for that project returns: the same entries in the same order, the
    same hits with the same scores, ties included."""
    rng = random.Random(seed)
    folder = path.parent
    writer, reader = (MemoryStore(folder, max_entries=cap, project=project) for project in projects)
    queries = [_text(rng) for _ in range(3)]
    for i in range(bulk):
        writer.remember("fact", f"{_text(rng)} bulk {i}", "test")
    if bulk:
        MemoryStore(folder, max_entries=cap).load()
    done: list[str] = []
    for _ in range(60):
        done.append(_step(rng, path, writer, reader, queries))
        for project in dict.fromkeys(projects):  # each project once
            first = MemoryStore(folder, max_entries=cap, project=project)
            first_hits = [[(score, entry.id) for score, entry in first.search(q, 4)] for q in queries]
            fresh = _seen(MemoryStore(folder, max_entries=cap, project=project), queries)
            assert first_hits == fresh[1], done
            for store in (writer, reader):
                if store.project == project:
                    assert _seen(store, queries) == fresh, (project, done)
    assert not list(folder.glob("memory.json.broken-*"))


@pytest.mark.parametrize(("seed", "cap", "bulk"), RUNS)
def test_a_reader_and_a_writer_answer_as_a_fresh_store_whatever_happened_to_the_file(
    tmp_path: Path, seed: int, cap: int, bulk: int
) -> None:
    _follow_a_random_run(tmp_path / "memory.json", seed, cap, bulk, (None, None))


@pytest.mark.parametrize(("seed", "cap", "bulk"), RUNS)
def test_stores_of_two_projects_answer_as_fresh_stores_of_their_projects(
    tmp_path: Path, seed: int, cap: int, bulk: int
) -> None:
    """As above, with a writer and a reader opened for different projects: each sees the global
    entries and its own, and a memory of one project re-learnt in the other becomes global."""
    _follow_a_random_run(tmp_path / "memory.json", seed, cap, bulk, ("alpha", "beta"))


def test_a_reader_orders_equal_scores_by_the_file_after_another_program_reordered_it(
    tmp_path: Path,
) -> None:
    """Equal scores and equal ts fall by file order; a store that read the file before another
    program moved its lines follows the new order, as a fresh store does."""
    texts = {"one": "deploy cache alpha", "two": "deploy cache bravo", "three": "deploy cache gamma"}

    def order(ids: list[str]) -> None:
        write_raw(tmp_path, [raw_entry("fact", texts[i], 7, entry_id=i) for i in ids])

    order(["one", "two", "three"])
    reader = MemoryStore(tmp_path)
    assert [entry.id for _, entry in reader.search("deploy cache")] == ["one", "two", "three"]
    time.sleep(0.01)  # another mtime, whatever the filesystem's clock
    order(["three", "one", "two"])
    assert [entry.id for _, entry in reader.search("deploy cache")] == ["three", "one", "two"]
    assert reader.search("deploy cache") == MemoryStore(tmp_path).search("deploy cache")


def test_a_project_store_ranks_another_projects_memory_made_global_by_its_place_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A memory of project beta, re-learnt in alpha, becomes global: alpha's store sees it for the
    first time, and ranks it among equal scores of equal ts by its place in the file (before the
    entry after it), as a fresh store of alpha does; not after everything it already indexed."""
    texts = {"one": "deploy cache alpha", "two": "deploy cache bravo", "three": "deploy cache gamma"}
    entries = [raw_entry("fact", text, 1000, entry_id=key) for key, text in texts.items()]
    entries[1]["project"] = "beta"
    write_raw(tmp_path, entries)
    alpha = MemoryStore(tmp_path, project="alpha")
    assert [entry.id for _, entry in alpha.search("deploy cache")] == ["one", "three"]
    monkeypatch.setattr(time, "time", lambda: 1000.0)  # the merge keeps ts 1000: a tie of equal ts
    assert alpha.remember("fact", "deploy cache bravo") is False  # merged into beta's, now global
    merged = alpha.get("two")
    assert merged is not None
    assert merged.project is None
    assert [entry.id for _, entry in alpha.search("deploy cache")] == ["one", "two", "three"]
    assert alpha.search("deploy cache") == MemoryStore(tmp_path, project="alpha").search("deploy cache")
