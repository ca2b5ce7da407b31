"""memory.cache and the cold search (coldcache.py, coldsearch.py): a new store's first searches are
answered from the cache without a full load, and give exactly what the full index gives."""

from __future__ import annotations

import json
import os
import random
import stat
import zlib
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nanohermes.memory import MemoryStore, coldcache, coldsearch
from nanohermes.memory.coldsearch import MIN_STALE

WORDS = [
    "deploy",
    "release",
    "pytest",
    "ruff",
    "docker",
    "image",
    "server",
    "painted",
    "painting",
    "makefiles",
    "makefile",
    "cache",
    "migration",
    "database",
    "frontend",
    "build",
    "nginx",
    "cron",
    "uv",
    "mypy",
    "lint",
    "format",
    "commit",
    "branch",
    "review",
]
ZH = ["部署脚本", "前端构建", "数据库迁移", "用中文回复", "单元测试", "缓存层"]
QUERIES = [
    "how do I deploy the server?",
    "painting makefiles",
    "部署脚本怎么跑",
    "pytest ruff mypy lint",
    "cache",
    "the",
    "database migration release branch review commit",
    "一下 前端构建 docker image",
]


def _text(rng: random.Random, i: int) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(2, 9))]
    if rng.random() < 0.3:
        words.append(rng.choice(ZH))
    return f"note {i}: " + " ".join(words)


def _fill(directory: Path, count: int, seed: int = 1) -> None:
    """A store of `count` memories of every kind, some with context, keys and a project."""
    rng = random.Random(seed)
    for i in range(count):
        store = MemoryStore(directory, max_entries=10_000, project=rng.choice([None, "p1", "p2"]))
        store.remember(
            rng.choice(["fact", "lesson", "preference", "correction"]),
            _text(rng, i),
            source="test",
            context=" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 6))),
            keys=[rng.choice(WORDS)] if rng.random() < 0.2 else (),
            scope=rng.choice(["global", "project"]),
        )


def _full(directory: Path, project: str | None) -> MemoryStore:
    store = MemoryStore(directory, max_entries=10_000, project=project)
    store.load()  # a full load: searches go through the index
    return store


def _assert_same(directory: Path, queries: list[str], projects: list[str | None]) -> None:
    for project in projects:
        full = _full(directory, project)
        for query in queries:
            for k in (1, 4, 10, 40):
                cold = MemoryStore(directory, max_entries=10_000, project=project)
                got = cold.search(query, k)
                assert cold._file.snapshot is None, "the cold path answered"
                want = full.search(query, k)
                assert [e.id for _, e in got] == [e.id for _, e in want], (query, k, project)
                for (a, _), (b, _) in zip(got, want, strict=True):
                    assert a == pytest.approx(b, rel=1e-12, abs=0.0)
                for _, entry in got:
                    assert cold.explain(query, entry.id) == full.explain(query, entry.id)
                assert cold._file.snapshot is None, "explaining a hit needs no full load"


def test_cache_written_by_a_full_load_and_private(tmp_path: Path) -> None:
    _fill(tmp_path, MIN_STALE + 10)  # each remember of a new store loads the whole file
    cache = tmp_path / coldcache.CACHE_FILE
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    packed = coldcache.read(tmp_path)
    assert packed is not None
    assert MIN_STALE <= len(packed.keys) < len(MemoryStore(tmp_path).load())  # not rewritten each time
    _fill(tmp_path, MIN_STALE, seed=3)
    packed = coldcache.read(tmp_path)
    assert packed is not None
    assert len(packed.keys) >= 2 * MIN_STALE


def test_small_store_writes_no_cache(tmp_path: Path) -> None:
    _fill(tmp_path, MIN_STALE - 10)
    _full(tmp_path, None)
    assert not (tmp_path / coldcache.CACHE_FILE).exists()


def test_cold_search_equals_full_search(tmp_path: Path) -> None:
    _fill(tmp_path, 150)
    _full(tmp_path, None)
    _assert_same(tmp_path, QUERIES, [None, "p1", "p2", "elsewhere"])


def test_cold_search_follows_changes_since_the_cache(tmp_path: Path) -> None:
    _fill(tmp_path, 150)
    _full(tmp_path, None)
    writer = MemoryStore(tmp_path, max_entries=10_000, project="p1")
    for i in range(5):  # appended lines, unknown to the cache
        writer.remember("lesson", f"fresh lesson {i}: deploy with make release painted", context="ship")
    entries = writer.load()
    writer.forget(entries[3].id)  # a cached line gone
    writer.remember("fact", entries[10].text, source="again")  # a duplicate: a cached line changed
    _assert_same(tmp_path, QUERIES + ["fresh lesson ship"], [None, "p1", "p2"])


def test_appended_lines_need_no_line_by_line_match(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fill(tmp_path, 150)
    _full(tmp_path, None)
    writer = MemoryStore(tmp_path, max_entries=10_000, project="p2")
    for i in range(4):  # appended by another session: the file still begins as cached
        writer.remember("lesson", f"appended lesson {i}: painted the nginx cron", context="deploy ship")
    writer.remember("preference", "appended preference: 部署脚本 in Chinese", scope="global")

    def no_line_view(*_: object) -> None:
        raise AssertionError("matched line by line")

    monkeypatch.setattr(coldsearch, "_line_view", no_line_view)
    _assert_same(tmp_path, [*QUERIES, "appended painted ship"], [None, "p2", "p1"])


def test_a_file_changed_in_place_has_the_next_full_load_rewrite_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A merge changes a cached line in place: the cold path still answers (line by line), and the
    next process's full load writes the cache again, so later processes take the fast path."""
    _fill(tmp_path, 150)
    _full(tmp_path, None)
    writer = MemoryStore(tmp_path, max_entries=10_000)
    entries = writer.load()
    writer.remember(entries[20].kind, entries[20].text, source="again")  # merged: changed in place
    before = coldcache.read(tmp_path)
    cold = MemoryStore(tmp_path, max_entries=10_000)
    assert cold.search("deploy")
    assert cold._file.snapshot is None  # answered line by line
    assert coldcache.read(tmp_path) == before  # a cold search never writes it
    _full(tmp_path, None)  # a new process's full load
    assert coldcache.read(tmp_path) != before

    def no_line_view(*_: object) -> None:
        raise AssertionError("matched line by line")

    monkeypatch.setattr(coldsearch, "_line_view", no_line_view)
    _assert_same(tmp_path, QUERIES, [None, "p1"])


def test_many_changes_fall_back_to_a_full_load_that_rewrites_the_cache(tmp_path: Path) -> None:
    _fill(tmp_path, 80)
    _full(tmp_path, None)
    cached = len(coldcache.read(tmp_path).keys)  # type: ignore[union-attr]
    writer = MemoryStore(tmp_path, max_entries=10_000)  # one store: its writes load nothing again
    for i in range(MIN_STALE + 5):  # more new lines than a cold search takes
        writer.remember("fact", f"bulk fact {i} about deploy number {i * 7}", source="test")
    assert len(coldcache.read(tmp_path).keys) == cached  # type: ignore[union-attr]
    store = MemoryStore(tmp_path, max_entries=10_000, project="p9")
    got = [e.id for _, e in store.search("deploy")]
    assert store._file.snapshot is not None  # answered by a full load …
    assert got == [e.id for _, e in _full(tmp_path, "p9").search("deploy", 4)]
    assert len(coldcache.read(tmp_path).keys) == 80 + MIN_STALE + 5  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"not json",
        b'{"format": 1}',
        b"[1, 2, 3]",
        b'{"format": 99}',
    ],
)
def test_unusable_cache_is_ignored(tmp_path: Path, damage: bytes) -> None:
    _fill(tmp_path, 80)
    want = [e.id for _, e in _full(tmp_path, None).search("deploy painted", 4)]
    (tmp_path / coldcache.CACHE_FILE).write_bytes(damage)
    store = MemoryStore(tmp_path, max_entries=10_000)
    assert [e.id for _, e in store.search("deploy painted", 4)] == want


def _sections(directory: Path) -> tuple[dict[str, Any], list[bytes]]:
    data = (directory / coldcache.CACHE_FILE).read_bytes()
    end = data.index(b"\n")
    header = json.loads(data[:end])
    sections, offset = [], end + 1
    for size in header["sections"]:
        sections.append(data[offset : offset + size])
        offset += size
    return header, sections


def _store_cache(directory: Path, header: dict[str, Any], sections: list[bytes], *, checksum: bool) -> None:
    if checksum:
        header["checksum"] = zlib.crc32(b"".join(sections))
    header["sections"] = [len(section) for section in sections]
    (directory / coldcache.CACHE_FILE).write_bytes(json.dumps(header).encode() + b"\n" + b"".join(sections))


def _edit_cache(directory: Path, change: str) -> None:
    header, sections = _sections(directory)
    if change == "fingerprint":
        header["fingerprint"] = "0" * 32
    elif change == "count":
        header["count"] += 1
    elif change == "totals":
        header["totals"].append([1, 2, 3])
    elif change == "format":
        header["format"] += 1
    elif change == "project":  # an entry's project index out of range
        meta = array("q")
        meta.frombytes(sections[0])
        meta[3] = len(header["projects"])
        sections[0] = meta.tobytes()
        _store_cache(directory, header, sections, checksum=True)
        return
    elif change == "checksum":  # one byte of the postings changed, the checksum not
        sections[6] = sections[6].replace(b" 1 ", b" 2 ", 1)
        _store_cache(directory, header, sections, checksum=False)
        return
    elif change == "truncated":
        path = directory / coldcache.CACHE_FILE
        path.write_bytes(path.read_bytes()[:-10])
        return
    _store_cache(directory, header, sections, checksum=False)


@pytest.mark.parametrize(
    "change", ["fingerprint", "count", "totals", "format", "checksum", "truncated", "project"]
)
def test_cache_that_does_not_check_out_is_ignored(tmp_path: Path, change: str) -> None:
    _fill(tmp_path, 80)
    want = [e.id for _, e in _full(tmp_path, None).search("deploy painted", 4)]
    _edit_cache(tmp_path, change)
    assert coldcache.read(tmp_path) is None
    assert [e.id for _, e in MemoryStore(tmp_path, max_entries=10_000).search("deploy painted", 4)] == want


@pytest.mark.parametrize("lie", ["slot", "offset"])
def test_cache_that_lies_with_a_good_checksum_goes_to_the_full_load(tmp_path: Path, lie: str) -> None:
    _fill(tmp_path, 80)
    want = [e.id for _, e in _full(tmp_path, None).search("deploy painted", 4)]
    header, sections = _sections(tmp_path)
    meta = array("q")
    meta.frombytes(sections[0])
    if lie == "slot":  # a posting of an entry that does not exist
        starts, ends = array("q"), array("q")
        starts.frombytes(sections[4])
        ends.frombytes(sections[5])
        terms = sections[3].decode().split("\n")[:-1]
        postings = {
            term: sections[6][ends[i] : ends[i + 1]].decode().split(" ") for i, term in enumerate(terms)
        }
        postings["deploy"] += ["999999", "1"]
        pairs = {term: [f"{p[i]} {p[i + 1]}" for i in range(0, len(p), 2)] for term, p in postings.items()}
        sections[3:] = coldcache._term_sections(pairs)
    else:  # a hit's line offset in the middle of another line
        for slot in range(header["count"]):
            meta[slot * coldcache.META + 4] += 3
    sections[0] = meta.tobytes()
    _store_cache(tmp_path, header, sections, checksum=True)
    assert coldcache.read(tmp_path) is not None
    store = MemoryStore(tmp_path, max_entries=10_000)
    assert [e.id for _, e in store.search("deploy painted", 4)] == want
    assert store._file.snapshot is not None  # the full load answered


def test_cache_far_larger_than_the_file_is_not_read(tmp_path: Path) -> None:
    _fill(tmp_path, 80)
    want = [e.id for _, e in _full(tmp_path, None).search("deploy painted", 4)]
    cache = tmp_path / coldcache.CACHE_FILE
    size = (tmp_path / "memory.json").stat().st_size
    with open(cache, "ab") as file:
        file.truncate(coldcache.size_limit(size) + 1)  # sparse: no disk used
    store = MemoryStore(tmp_path, max_entries=10_000)
    assert [e.id for _, e in store.search("deploy painted", 4)] == want
    assert store._file.snapshot is not None  # the full load answered


def _cut_in_half(raw: bytes) -> bytes:
    return raw[: len(raw) // 2]


def _one_line_not_json(raw: bytes) -> bytes:
    lines = raw.split(b"\n")
    lines[5] = lines[5][:-3] + b"!!" + lines[5][-1:]  # a changed line: not in the cache
    return b"\n".join(lines)


@pytest.mark.parametrize("damage", [_cut_in_half, _one_line_not_json])
def test_broken_memory_file_is_still_moved_aside(tmp_path: Path, damage: Callable[[bytes], bytes]) -> None:
    _fill(tmp_path, 80)
    _full(tmp_path, None)
    path = tmp_path / "memory.json"
    path.write_bytes(damage(path.read_bytes()))  # the cache must not answer for this file
    notices: list[str] = []
    store = MemoryStore(tmp_path, max_entries=10_000, on_notice=notices.append)
    assert store.search("deploy") == []
    assert len(notices) == 1
    assert "moved to" in notices[0]


def test_repeated_line_goes_to_the_full_load(tmp_path: Path) -> None:
    _fill(tmp_path, 80)
    _full(tmp_path, None)
    path = tmp_path / "memory.json"
    lines = path.read_bytes().split(b"\n")
    lines.insert(4, lines[3])  # the same entry twice: the full load gives the copy a new id
    path.write_bytes(b"\n".join(lines))
    store = MemoryStore(tmp_path, max_entries=10_000)
    want = [e.id for _, e in _full(tmp_path, None).search("note", 40)]
    assert [e.id for _, e in store.search("note", 40)] == want
    assert store._file.snapshot is not None  # answered by the full load


def test_cache_that_cannot_be_written_leaves_the_store_working(tmp_path: Path) -> None:
    _fill(tmp_path, 80)
    (tmp_path / coldcache.CACHE_FILE).unlink()
    (tmp_path / coldcache.CACHE_FILE).mkdir()  # the rename onto it fails, as on a full disk
    hits = _full(tmp_path, None).search("deploy", 4)
    assert hits
    assert sorted(os.listdir(tmp_path)) == ["memory.cache", "memory.json", "memory.json.lock"]
    assert os.listdir(tmp_path / coldcache.CACHE_FILE) == []
