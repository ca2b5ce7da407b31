"""At its cap a store evicts on every write through a queue that follows the writes (eviction.py):
what it evicts is what ranking every entry evicts (SPEC §3.4), whatever the writes before."""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from nanohermes.memory import MemoryStore
from nanohermes.memory import store as store_module
from nanohermes.memory.docs import make_doc
from nanohermes.memory.entry import Entry
from nanohermes.memory.eviction import EvictionQueue, eviction_order, trim
from nanohermes.memory.kinds import Kind
from nanohermes.memory.snapshot import Snapshot

WORDS = ["deploy", "cache", "uv", "pytest", "部署脚本", "缓存层", "docs", "ci", "nginx", "cron", "ruff"]


class _Clock:
    """time.time for the store: a few writes share each second, so ties on ts are common."""

    def __init__(self, rng: random.Random) -> None:
        self.now = 1_700_000_000.0
        self.rng = rng

    def time(self) -> float:
        self.now += self.rng.choice([0, 0, 1])
        return self.now


def test_evictions_at_the_cap_are_those_of_ranking_every_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(4)
    clock = _Clock(rng)
    monkeypatch.setattr(store_module, "time", SimpleNamespace(time=clock.time))
    store = MemoryStore(tmp_path, max_entries=25)
    other = MemoryStore(tmp_path, max_entries=25)  # another session writing to the same file
    evicted = 0
    for step in range(400):
        writer = other if rng.random() < 0.1 else store
        before = writer.load()
        roll = rng.random()
        if roll < 0.08 and before:
            assert writer.forget(rng.choice(before).id)
            continue
        if roll < 0.25 and before:  # refreshed (new ts, maybe a better kind): merged in place
            old = rng.choice(before)
            kind = rng.choice(list(Kind))
            text = old.text
        else:
            kind = rng.choice(list(Kind))
            text = f"{' '.join(rng.sample(WORDS, 3))} note {step}"
        added = writer.remember(kind, text)
        after = writer.load()
        if not added:
            assert len(after) == len(before)
            continue
        new_id = writer.last_id
        assert new_id is not None
        expected = [*before, Entry(new_id, kind, text, ts=int(clock.now))]
        trim(expected, 25)
        assert [e.id for e in after] == [e.id for e in expected], step
        evicted += len(before) + 1 - len(after)
    assert evicted > 100  # the run spent most of its time at the cap


def test_the_queue_holds_what_it_is_given_and_first_changes_nothing() -> None:
    entries = [Entry(f"e{i}", Kind.FACT if i % 3 else Kind.LESSON, f"t{i}", ts=i % 4) for i in range(50)]
    snap = Snapshot([make_doc(e) for e in entries])
    queue = EvictionQueue()
    queue.sync(snap)
    assert len(queue) == 50
    expected = [entries[i].id for i in eviction_order(entries, 10)]
    assert [entry_id for _, entry_id in queue.first(10)] == expected
    assert [entry_id for _, entry_id in queue.first(10)] == expected  # first() popped nothing
    assert len(queue.first(80)) == 50
