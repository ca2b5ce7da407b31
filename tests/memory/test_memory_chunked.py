"""Chunked sequences (the lists of a memory.json snapshot) against plain lists, and the file a long
run of writes leaves against the file written from scratch."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from nanohermes.memory import MemoryStore, layout, snapshot
from nanohermes.memory.chunked import Chunked
from nanohermes.memory.kinds import Kind
from nanohermes.memory.layout import dump_lines


def _check(made: Chunked[int], plain: list[int], size: int) -> None:
    assert len(made) == len(plain)
    assert list(made) == plain
    assert [made[i] for i in range(len(plain))] == plain
    assert [made[-i] for i in range(1, len(plain) + 1)] == [plain[-i] for i in range(1, len(plain) + 1)]
    assert made[1:-1:2] == plain[1:-1:2]
    assert all(0 < len(chunk) <= size for chunk in made.chunks)
    with pytest.raises(IndexError):
        made[len(plain)]  # noqa: B018


@pytest.mark.parametrize("size", [1, 3, 8])
def test_chunked_sequences_behave_as_plain_lists(size: int) -> None:
    rng = random.Random(size)
    for _ in range(20):
        plain = list(range(rng.randint(0, 30)))
        made = Chunked.of(plain, size)
        older = [(made, list(plain))]
        counter = 1000
        for _ in range(60):
            roll = rng.random()
            if roll < 0.4:
                items = list(range(counter, counter + rng.randint(1, 5)))
                counter += len(items)
                made, plain = made.appended(items), plain + items
            elif roll < 0.6 and plain:
                index = rng.randrange(len(plain))
                made, plain = made.replaced(index, -index), [*plain[:index], -index, *plain[index + 1 :]]
            elif plain:
                drop = set(rng.sample(range(len(plain)), rng.randint(1, min(4, len(plain)))))
                made, plain = made.without(drop), [x for i, x in enumerate(plain) if i not in drop]
            _check(made, plain, size)
            older.append((made, list(plain)))
        for version, items in older:  # every older version is unchanged by the ones made from it
            assert list(version) == items


def test_short_chunks_are_laid_out_again() -> None:
    made = Chunked.of(list(range(400)), 10)
    for _ in range(30):  # one item out of each of many chunks
        made = made.without({i * 9 for i in range(len(made) // 9)})
        assert sum(len(chunk) < 10 for chunk in made.chunks[:-1]) <= max(8, len(made.chunks) // 4)
    assert list(made) == sorted(made)


def test_the_file_after_many_writes_is_the_file_written_from_scratch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Appends, merges, evictions at the cap and forgets, 4 lines to a block: after every write the
    file is byte for byte the dump of the entries' lines, and a fresh store reads the same."""
    monkeypatch.setattr(layout, "BLOCK_LINES", 4)
    monkeypatch.setattr(snapshot, "BLOCK_LINES", 4)
    rng = random.Random(9)
    store = MemoryStore(tmp_path, max_entries=40)
    reader = MemoryStore(tmp_path)  # another session, following every write
    words = ["deploy", "cache", "uv", "pytest", "部署脚本", "缓存层", "不要", "never", "docs", "ci"]
    for step in range(250):
        roll = rng.random()
        entries = store.load()
        if roll < 0.1 and entries:
            assert store.forget(rng.choice(entries).id)
        elif roll < 0.25 and entries:  # the same text again, longer: merged in place
            old = rng.choice(entries)
            store.remember(old.kind, f"{old.text} {rng.choice(words)} {step}")
        else:
            text = " ".join(rng.choice(words) for _ in range(rng.randint(2, 6)))
            store.remember(rng.choice(list(Kind)), f"{text} number {step}")
        lines = [json.dumps(entry.to_dict(), ensure_ascii=False).encode() for entry in store.load()]
        assert (tmp_path / "memory.json").read_bytes() == b"".join(dump_lines(lines)), step
        assert len(store) <= 40
        assert reader.load() == store.load()
    assert MemoryStore(tmp_path).load() == store.load()
