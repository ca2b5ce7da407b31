"""The cap (`memory_max_entries`), eviction order (at a raised cap, at the cap on every write whatever the
writes before), and emoji sequences (SPEC §3.4, §6)."""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

import pytest
from memory_helpers import raw_entry, write_raw

from nanohermes.config.settings import load_settings
from nanohermes.core.errors import ConfigError, MemoryRejected, StoreError
from nanohermes.memory import MAX_ENTRIES, Entry, Kind, MemoryStore
from nanohermes.memory import writing as writing_module
from nanohermes.ui.memory_cmd import run_memory_command


def test_memory_max_entries_setting(tmp_path: Path) -> None:
    home = {"HOME": str(tmp_path)}
    assert load_settings({}, environ=home).memory_max_entries == MAX_ENTRIES == 500
    raised = load_settings({}, environ={**home, "NANOHERMES_MEMORY_MAX_ENTRIES": "20000"})
    assert raised.memory_max_entries == 20_000
    with pytest.raises(ConfigError, match="NANOHERMES_MEMORY_MAX_ENTRIES"):
        load_settings({}, environ={**home, "NANOHERMES_MEMORY_MAX_ENTRIES": "0"})
    with pytest.raises(StoreError, match="positive integer"):
        MemoryStore(tmp_path, max_entries=0)


def test_the_cli_store_honours_the_setting(tmp_path: Path) -> None:
    """`nanohermes memory …` opens the store with the configured cap (stats shows it)."""
    from io import StringIO

    from rich.console import Console

    from nanohermes.config.options import MemoryArgs

    settings = load_settings({"memory_dir": tmp_path}, environ={"NANOHERMES_MEMORY_MAX_ENTRIES": "1234"})
    out = StringIO()
    assert run_memory_command(MemoryArgs("stats"), settings, Console(file=out, width=120)) == 0
    assert "of at most 1234" in out.getvalue()


def test_a_small_cap_evicts_facts_first_then_the_oldest(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path, max_entries=3)
    store.remember("preference", "Answer in English please")
    store.remember("fact", "The repository uses uv for packaging")
    store.remember("lesson", "Run the slow tests only in CI")
    store.remember("fact", "The docs live in docs/site")
    assert [e.kind.value for e in store.load()] == ["preference", "lesson", "fact"]
    assert store.stats().max_entries == 3


def test_eviction_order_at_a_raised_cap(tmp_path: Path) -> None:
    cap = 2000
    rows = [raw_entry("preference", f"preference {i}", ts=1, entry_id=f"p{i}") for i in range(5)]
    rows += [
        raw_entry("lesson", f"lesson {i} on builds", ts=10 + i % 7, entry_id=f"l{i}") for i in range(995)
    ]
    rows += [raw_entry("fact", f"fact {i} about hosts", ts=50 - i % 5, entry_id=f"f{i}") for i in range(1000)]
    write_raw(tmp_path, rows)
    store = MemoryStore(tmp_path, max_entries=cap)
    assert len(store) == cap
    for i in range(3):
        assert store.remember("correction", f"correction {i}: not tabs, spaces")
    ids = {e.id for e in store.load()}
    assert len(ids) == cap
    # The three oldest facts go: ts 46 first, earliest in the file on a tie (f4, f9, f14).
    assert {"f4", "f9", "f14"}.isdisjoint(ids)
    assert {"f19", "f3", "p0", "l0"} <= ids
    assert all(f"correction {i}: not tabs, spaces" in {e.text for e in store.load()} for i in range(3))


def trim(entries: list[Entry], limit: int) -> None:
    """The eviction rule of SPEC §3.4 written plainly: while over `limit`, drop the entry of the
    highest eviction rank, then the oldest ts, then the earliest in the list."""
    while len(entries) > limit:
        entries.pop(
            min(range(len(entries)), key=lambda i: (-entries[i].kind.eviction_rank, entries[i].ts, i))
        )


WORDS = ["deploy", "cache", "uv", "pytest", "部署脚本", "缓存层", "docs", "ci", "nginx", "cron", "ruff"]


class _Clock:
    """time.time for `remember`: a few writes share each second, so ties on ts are common."""

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
    monkeypatch.setattr(writing_module, "time", SimpleNamespace(time=clock.time))
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


@pytest.mark.parametrize(
    "emoji",
    [
        "🧘‍♀️",  # person in lotus position, ZWJ, female sign, variation selector 16
        "👨‍👩‍👧",  # family: two ZWJs
        "🏳️‍🌈",  # rainbow flag: VS16 before the ZWJ
        "👍🏽",  # skin tone modifier
        "❤️",  # variation selector alone
        "🏴󠁧󠁢󠁳󠁣󠁴󠁿",  # subdivision flag: tag characters and a cancel tag
    ],
)
def test_emoji_sequences_are_ordinary_text(tmp_path: Path, emoji: str) -> None:
    store = MemoryStore(tmp_path)
    assert store.remember("preference", f"Start every yoga reminder with {emoji} please")
    assert emoji in store.load()[0].text


@pytest.mark.parametrize(
    "text",
    [
        "use\u200dtabs",  # a joiner between letters
        "\u200d🧘 at the start",  # nothing before the joiner
        "🧘\u200d",  # nothing after it
        "tag \U000e0041 without a flag",
        "🏴\U000e0067\U000e0062 without the cancel tag",
    ],
)
def test_lone_invisible_characters_stay_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(MemoryRejected, match="invisible Unicode"):
        MemoryStore(tmp_path).remember("preference", text)
