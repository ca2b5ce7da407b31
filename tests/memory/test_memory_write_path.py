"""The write path against the plain way of doing the same thing: the duplicate-key finder against a
scan of every key, the file after any sequence of writes against the file written from scratch,
the tokenizer's fast path against the plain rule, and a store that read the file before against
a fresh store, whatever another session or program did to the file."""

from __future__ import annotations

import itertools
import json
import random
import re
import string
from pathlib import Path

import pytest

from nanohermes.memory import MemoryStore
from nanohermes.memory.constants import DUPLICATE_MIN_WEIGHT
from nanohermes.memory.kinds import Kind
from nanohermes.memory.state import Keys
from nanohermes.memory.text import _CJK_RANGES, normalize, tokenize, weight

PIECES = [
    "部署",
    "脚本",
    "缓存",
    "清理",
    "deploy",
    "script",
    "cache",
    "uv",
    "pytest",
    "dry",
    "run",
    "的",
    "x",
]


def _reference(key: str, keys: dict[int, str]) -> set[int]:
    """Every order whose key could be a duplicate of `key`: equal, or one inside the other with the
    shorter weighing enough (what a scan over all keys finds)."""
    found = set()
    for order, theirs in keys.items():
        shorter = key if len(key) <= len(theirs) else theirs
        if theirs == key or (weight(shorter) >= DUPLICATE_MIN_WEIGHT and (key in theirs or theirs in key)):
            found.add(order)
    return found


def _keys(stored: dict[int, str]) -> Keys:
    keys = Keys()
    for order, key in stored.items():
        keys.add(order, key)
    return keys


def test_key_finder_finds_what_a_scan_of_every_key_finds() -> None:
    rng = random.Random(5)
    index = Keys()
    keys: dict[int, str] = {}
    for step in range(3000):  # past several joins of the keys
        key = normalize("".join(rng.choice(PIECES) for _ in range(rng.randint(1, 9))))
        order = step % 700
        if rng.random() < 0.15 and keys:
            gone = rng.choice(sorted(keys))
            index.remove(gone)
            del keys[gone]
            continue
        if order in keys:  # the same entry again, refreshed with another text
            index.remove(order)
        index.add(order, key)
        keys[order] = key
        probe = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 6)))
        assert _reference(probe, keys) <= index.candidates(probe) <= set(keys)
    assert index.key_of == keys


def test_key_finder_finds_stored_keys_of_every_length_inside_and_around_a_new_key() -> None:
    """Stored keys of every length, wherever they start in the new key; a key inside a longer one
    of another script; a key holding the separator of the joined keys."""
    rng = random.Random(8)
    text = "".join(rng.choice(string.ascii_lowercase + "部署缓存") for _ in range(420))
    stored = {n: text[n : 2 * n] for n in range(3, 210, 3)}
    keys = _keys(stored)
    assert keys.candidates(text) >= {n for n in stored if n >= 12} | _reference(text, stored)
    assert keys.candidates(text[:200]) == _reference(text[:200], stored)
    base = "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnop"
    keys = _keys({n: base[:n] for n in range(12, 52)} | {99: "部署脚本" + base[:20] + "缓存"})
    for n in range(12, 52):
        assert keys.candidates(base[:n]) >= set(range(n, 52)), n
    assert 99 in keys.candidates("脚本" + base[:4])  # weight 2 · 4 + 4
    assert keys.candidates("缓存部署") == set()
    assert _keys({1: "abc\x00defghijklmnopq"}).candidates("c\x00defghijklm") == {1}


def _layout(entries: list[object], top: str = "") -> bytes:
    """memory.json as nanohermes writes it: one entry per line, other top-level fields after the list."""
    lines = ",\n    ".join(json.dumps(item, ensure_ascii=False) for item in entries)
    body = f"[\n    {lines}\n  ]" if entries else "[]"
    return f'{{\n  "version": 1,\n  "entries": {body}{top}\n}}\n'.encode()


def test_a_store_keeps_what_it_cannot_use_through_writes(tmp_path: Path) -> None:
    (tmp_path / "memory.json").write_bytes(
        _layout([{"id": "b2", "kind": "habit", "text": "newer kind", "ts": 2}], top=',\n  "owner": "me"')
    )
    store = MemoryStore(tmp_path)
    assert store.remember("fact", "The project uses uv")
    store.search("uv")
    assert store.remember("fact", "The docs live in docs/site")
    data = json.loads((tmp_path / "memory.json").read_text(encoding="utf-8"))
    assert data["owner"] == "me"
    assert [item["kind"] for item in data["entries"]] == ["fact", "fact", "habit"]


def test_the_file_after_any_writes_is_the_file_written_from_scratch(tmp_path: Path) -> None:
    """Appends, merges in place, evictions at the cap and forgets: after every write the file is
    exactly every entry's line laid out afresh, and a new store reads back the same entries."""
    rng = random.Random(3)
    store = MemoryStore(tmp_path, max_entries=10)
    for step in range(60):
        roll = rng.random()
        if roll < 0.15 and store.load():
            store.forget(rng.choice(store.load()).id)
        elif roll < 0.3 and store.load():  # a longer text of an existing memory: merged in place
            old = rng.choice(store.load())
            store.remember(old.kind, f"{old.text} and more {step}")
        else:
            store.remember(rng.choice(list(Kind)), f"memory number {step} about {rng.choice(PIECES)}")
        expected = _layout([entry.to_dict() for entry in store.load()])
        assert (tmp_path / "memory.json").read_bytes() == expected
        assert MemoryStore(tmp_path).load() == store.load()
    assert oct((tmp_path / "memory.json").stat().st_mode & 0o777) == "0o600"


def _plain_tokenize(text: str) -> list[str]:
    """SPEC §3.5's tokenizer written plainly: runs of CJK as overlapping bigrams (a lone character
    stays), runs of other letters and digits lowercased when at least 2 long."""
    tokens: list[str] = []
    for cjk, word in re.findall(f"([{_CJK_RANGES}]+)|([^\\W_{_CJK_RANGES}]+)", text):
        if word and len(word) >= 2:
            tokens.append(word.lower())
        elif cjk:
            tokens.extend([cjk] if len(cjk) == 1 else [a + b for a, b in itertools.pairwise(cjk)])
    return tokens


def test_the_fast_tokenizer_equals_the_plain_one() -> None:
    rng = random.Random(11)
    alphabet = string.printable + "éÉü_İ中文字部署かカ한\u200d\u309b😀"
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert tokenize(text) == _plain_tokenize(text), text


def test_a_reader_follows_another_session_s_appends_merges_forgets_and_evictions(tmp_path: Path) -> None:
    reader, writer = MemoryStore(tmp_path, max_entries=30), MemoryStore(tmp_path, max_entries=30)
    writer.remember("fact", "The project uses uv for packaging")
    assert [e.text for _, e in reader.search("packaging")] == ["The project uses uv for packaging"]
    reader.remember("lesson", "Run the slow tests only in CI")  # the reader wrote last once too
    for name in ("alpha", "bravo", "charlie", "delta"):
        writer.remember("fact", f"the {name} deploy target is {name}.example.org")
        assert reader.search(name)[0][1].text == f"the {name} deploy target is {name}.example.org"
        assert reader.load() == writer.load()
    writer.remember("lesson", "Run the slow tests only in CI runners")  # a merge: one line changed
    assert reader.load() == writer.load()
    assert reader.search("runners")[0][1].text == "Run the slow tests only in CI runners"
    writer.forget(writer.load()[0].id)
    assert reader.load() == writer.load()
    writer.remember("fact", "The docs live in docs/site")
    assert reader.get(writer.last_id or "") is not None
    kinds = ["fact", "lesson", "preference", "correction"]
    for i in range(40):  # past the cap: every new memory evicts one
        writer.remember(kinds[i % 4], f"rule {i}: the service{i} port is {8000 + i}")
        assert reader.load() == writer.load()
        fresh = MemoryStore(tmp_path, max_entries=30)
        for query in (f"service{i} port", "service port", "rule"):
            assert reader.search(query, top_k=5) == fresh.search(query, top_k=5)
    assert len(writer.load()) == 30


def _file_of(texts: list[str]) -> bytes:
    items = [{"id": f"m{i}", "kind": "fact", "text": t, "source": "t", "ts": i} for i, t in enumerate(texts)]
    return _layout(items)


@pytest.mark.parametrize(
    "edit",
    [
        lambda raw: raw.replace(b"host7.example", b"blue7.example"),  # one line in place
        lambda raw: raw.replace(b'"id": "m9"', b'"id": "x9"'),  # another id
        lambda raw: raw.replace(b"host3.example", b"host3\\u00e9example"),  # an escape: same id
        lambda raw: raw.replace(b"host5", b"hostV").replace(b"host6", b"hostW"),  # two lines
        lambda raw: raw.replace(b'"id": "m2", "kind": "fact"', b'"id": "m2", "kind": "opinion"'),
        lambda raw: raw.replace(b'"id": "m4"', b'"id": "m3"'),  # the same id twice
        lambda raw: json.dumps(json.loads(raw), indent=None).encode(),  # another layout
    ],
)
def test_a_reader_follows_another_program_s_edits(tmp_path: Path, edit: object) -> None:
    texts = [f"deploy note {i}: the staging host is host{i}.example.org" for i in range(40)]
    path = tmp_path / "memory.json"
    path.write_bytes(_file_of(texts))
    reader = MemoryStore(tmp_path)
    assert reader.search("host7")[0][1].id == "m7"
    assert callable(edit)
    path.write_bytes(edit(path.read_bytes()))
    fresh = MemoryStore(tmp_path / "fresh")
    (tmp_path / "fresh").mkdir()
    (tmp_path / "fresh" / "memory.json").write_bytes(path.read_bytes())
    assert reader.load() == fresh.load()
    for query in ("staging host", "host7", "blue7", "hostv"):
        assert reader.search(query) == fresh.search(query)
