"""memory.json written by another program loses nothing on our rewrites (SPEC §3.2; issue #19 item 7)."""

from __future__ import annotations

import json
from pathlib import Path

from memory_helpers import raw_entry, write_raw

from nanohermes.memory import Kind, MemoryStore


def _stored(directory: Path) -> dict[str, object]:
    data = json.loads((directory / "memory.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_unknown_kinds_unknown_fields_and_odd_items_survive_every_rewrite(tmp_path: Path) -> None:
    pinned = raw_entry("preference", "always answer in English", 10, "aaaa1111") | {
        "pinned": True,
        "meta": {"by": "v9", "tags": ["x"]},
    }
    future = raw_entry("habit", "stretches every hour", 11, "bbbb2222") | {"weight": 3}
    blank = raw_entry("fact", "   ", 12, "cccc3333")
    path = write_raw(tmp_path, [pinned, future, blank, "a bare string", 42])
    data = json.loads(path.read_text(encoding="utf-8"))
    data["owner"] = {"program": "nanohermes 9"}
    path.write_text(json.dumps(data), encoding="utf-8")

    store = MemoryStore(tmp_path)
    assert [e.text for e in store.load()] == ["always answer in English"]  # the others are not used
    assert store.remember(Kind.FACT, "the deploy script is scripts/ship.sh", source="user")
    other = store.load()[-1].id
    assert store.forget(other)
    assert not store.remember(Kind.PREFERENCE, "always answer in English please", source="user")

    stored = _stored(tmp_path)
    assert stored["owner"] == {"program": "nanohermes 9"}
    items = stored["entries"]
    assert isinstance(items, list)
    first = items[0]
    assert first["pinned"] is True
    assert first["meta"] == {"by": "v9", "tags": ["x"]}
    assert first["text"] == "always answer in English please"  # merged, extras kept
    assert future in items
    assert blank in items
    assert "a bare string" in items
    assert 42 in items
    assert len(items) == 5
    # a fresh process reads it back the same way and keeps it all again
    fresh = MemoryStore(tmp_path)
    assert fresh.remember(Kind.LESSON, "run the tests with -x first", source="user")
    again = _stored(tmp_path)["entries"]
    assert isinstance(again, list)
    assert future in again
    assert 42 in again
    assert len(again) == 6


def test_a_memory_cache_left_by_an_older_version_is_ignored(tmp_path: Path) -> None:
    """Older versions kept the search index in memory.cache beside memory.json: a stale, foreign or
    damaged one changes nothing, and nothing here reads, writes or trips over it."""
    write_raw(tmp_path, [raw_entry("fact", "deploy with make release", 5, "aaaa1111")])
    (tmp_path / "memory.cache").write_bytes(b"NHMC\x01" + b"\xff" * 4096)
    store = MemoryStore(tmp_path)
    assert [e.id for _, e in store.search("deploy")] == ["aaaa1111"]
    assert store.remember(Kind.LESSON, "run the slow tests only in CI", source="user")
    hits = MemoryStore(tmp_path).search("slow tests")
    assert [e.text for _, e in hits] == ["run the slow tests only in CI"]
    assert (tmp_path / "memory.cache").read_bytes() == b"NHMC\x01" + b"\xff" * 4096
