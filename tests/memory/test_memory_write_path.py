"""What keeps `remember` and reloads cheap, checked against the plain way of doing the same thing:
the duplicate-key index against a scan of every key, the line-by-line parse against the whole
document, the gathered write against one joined write, the id map handed from version to version,
the tokenizer's fast paths against the plain rule."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import re
import string
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from nanohermes.core.fileio import atomic_write
from nanohermes.memory import MemoryStore, layout, snapshot
from nanohermes.memory import derived as derived_module
from nanohermes.memory.constants import DUPLICATE_MIN_WEIGHT
from nanohermes.memory.derived import Derived
from nanohermes.memory.docs import make_doc
from nanohermes.memory.duplicates import KeyIndex
from nanohermes.memory.entry import Entry, parse_document
from nanohermes.memory.kinds import Kind
from nanohermes.memory.layout import dump_lines
from nanohermes.memory.snapshot import Snapshot
from nanohermes.memory.text import _CJK_RANGES, tokenize, weight

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


def _reference(key: str, keys: dict[str, str]) -> set[str]:
    """Every id whose key could be a duplicate of `key`: equal, or one inside the other with the
    shorter weighing enough (what a scan over all keys finds)."""
    found = set()
    for entry_id, theirs in keys.items():
        shorter = key if len(key) <= len(theirs) else theirs
        if theirs == key or (weight(shorter) >= DUPLICATE_MIN_WEIGHT and (key in theirs or theirs in key)):
            found.add(entry_id)
    return found


def test_key_index_finds_what_a_scan_of_every_key_finds() -> None:
    rng = random.Random(5)
    index = KeyIndex()
    keys: dict[str, str] = {}
    for step in range(1500):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 9)))
        doc = make_doc(Entry(f"e{step % 700}", Kind.FACT, text))
        if rng.random() < 0.15 and keys:
            gone = rng.choice(sorted(keys))
            index.remove(gone)
            del keys[gone]
            continue
        index.apply((), (doc,))  # new or replaced (the same id again)
        keys[doc.entry.id] = doc.key
        probe = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 6)))
        found = index.candidates(probe)
        assert _reference(probe, keys) <= found <= set(keys)
    assert index.key_of == keys
    index.sync([make_doc(Entry(i, Kind.FACT, k)) for i, k in list(keys.items())[:50]])
    assert len(index) == 50


def test_key_index_finds_keys_on_every_shelf_that_may_hold_them() -> None:
    """Keys are shelved by length (16 characters a shelf) and script: a key is found inside longer
    ones at every shelf boundary, and an ASCII key inside a key with CJK characters."""
    base = "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnop"
    stored = {f"s{n}": base[:n] for n in range(12, 52)} | {"cjk": "部署脚本" + base[:20] + "缓存"}
    index = KeyIndex([make_doc(Entry(i, Kind.FACT, text)) for i, text in stored.items()])
    for n in range(12, 52):
        assert index.candidates(base[:n]) >= {f"s{m}" for m in range(n, 52)}, n
    assert "cjk" in index.candidates(base[:20])
    assert "cjk" in index.candidates("脚本" + base[:4])  # weight 2 · 4 + 4
    assert index.candidates("缓存部署") == set()


def test_key_index_finds_stored_keys_of_every_head_length_inside_a_new_key() -> None:
    """Stored keys are found by their first 16, 32, 64, 128 or 256 characters: every one of them,
    short or long, is found inside a longer new key, wherever it starts."""
    rng = random.Random(8)
    text = "".join(rng.choice(string.ascii_lowercase + "部署缓存") for _ in range(420))
    stored = {f"s{n}": text[n : 2 * n] for n in range(12, 210, 3)}
    index = KeyIndex([make_doc(Entry(i, Kind.FACT, key)) for i, key in stored.items()])
    assert index.candidates(text) >= set(stored)
    assert index.candidates(text[:200]) == _reference(text[:200], stored)


def test_key_index_survives_a_separator_in_a_key() -> None:
    index = KeyIndex([make_doc(Entry("a", Kind.FACT, "abc\x00defghijklmnopq"))])
    assert index.candidates("c\x00defghijklm") == {"a"}


def _file(entries: list[dict[str, object]], top: str = "") -> bytes:
    lines = [json.dumps(item, ensure_ascii=False).encode() for item in entries]
    data = b"".join(dump_lines(lines))
    return data if not top else data[: -len(b"\n}\n")] + top.encode() + b"\n}\n"


def test_kept_entries_and_fields_are_read_line_by_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file with entries this version cannot use and unknown top-level fields parses line by
    line (never the whole document) into what the whole-document parse gives."""
    raw = _file(
        [
            {"id": "a1", "kind": "fact", "text": "uses uv", "source": "t", "ts": 1},
            {"id": "b2", "kind": "habit", "text": "a kind from a newer version", "ts": 2},
            "not an object",
            {"id": "c3", "kind": "lesson", "text": "run the slow tests in CI", "ts": 3, "mood": "ok"},
        ],
        top=',\n  "owner": {"name": "Zoë"},\n  "tags": [1, 2]',
    )
    whole = parse_document(raw)
    monkeypatch.setattr(derived_module, "parse_document", _never)
    by_line = Derived().parse(raw)
    assert by_line == whole
    assert [entry.id for entry in by_line.entries] == ["a1", "c3"]
    assert len(by_line.kept.lines) == 2
    assert [name for name, _ in by_line.kept.top] == ["owner", "tags"]


def _never(raw: bytes, known: object = None) -> object:
    raise AssertionError("the whole document was parsed")


@pytest.mark.parametrize(
    "top",
    [
        ',\n  "entries": []',  # a second entries list wins in the whole document
        ',\n  "version": 7',
        ',\n  "x": 1}, {"y": 2',
    ],
)
def test_tricky_tails_take_the_whole_document(top: str) -> None:
    raw = _file([{"id": "a1", "kind": "fact", "text": "uses uv", "ts": 1}], top=top)
    try:
        whole: object = parse_document(raw)
    except ValueError as err:
        whole = type(err)
    try:
        by_line: object = Derived().parse(raw)
    except ValueError as err:
        by_line = type(err)
    assert by_line == whole


def test_a_store_keeps_what_it_cannot_use_through_writes(tmp_path: Path) -> None:
    (tmp_path / "memory.json").write_bytes(
        _file(
            [{"id": "b2", "kind": "habit", "text": "newer kind", "ts": 2}],
            top=',\n  "owner": "me"',
        )
    )
    store = MemoryStore(tmp_path)
    assert store.remember("fact", "The project uses uv")
    store.search("uv")
    assert store.remember("fact", "The docs live in docs/site")
    data = json.loads((tmp_path / "memory.json").read_text(encoding="utf-8"))
    assert data["owner"] == "me"
    assert [item["kind"] for item in data["entries"]] == ["fact", "fact", "habit"]


def test_pieces_are_written_as_the_joined_bytes(tmp_path: Path) -> None:
    lines = [f'{{"n": {i}, "text": "{"é" * (i % 50)}"}}'.encode() for i in range(3000)]
    pieces = dump_lines(lines)
    atomic_write(tmp_path / "gathered.json", pieces)
    assert (tmp_path / "gathered.json").read_bytes() == b"".join(pieces)
    assert json.loads(b"".join(pieces))["entries"][2999]["n"] == 2999
    assert os.stat(tmp_path / "gathered.json").st_mode & 0o777 == 0o600


def test_an_older_version_never_finds_an_id_a_newer_one_added() -> None:
    old = Snapshot([make_doc(Entry("a", Kind.FACT, "first"))])
    assert old.position("a") == 0
    new = old.appended(make_doc(Entry("b", Kind.FACT, "second")), b"{}")
    assert new.position("b") == 1
    assert new.position("a") == 0
    assert old.position("b") is None
    assert old.position("a") == 0


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


def test_blocks_of_lines_follow_appends_merges_evictions_and_forgets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes touch only the block they change (3 lines to a block here); the file stays exactly
    the dump of every entry's line, whatever the sequence of writes."""
    monkeypatch.setattr(layout, "BLOCK_LINES", 3)
    monkeypatch.setattr(snapshot, "BLOCK_LINES", 3)
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
        lines = [json.dumps(entry.to_dict(), ensure_ascii=False).encode() for entry in store.load()]
        assert (tmp_path / "memory.json").read_bytes() == b"".join(dump_lines(lines))
        assert MemoryStore(tmp_path).load() == store.load()


def _count_parses(monkeypatch: pytest.MonkeyPatch, only: Derived | None = None) -> list[bytes]:
    """The files parsed line by line from now on (by `only`'s store, when given)."""
    parsed: list[bytes] = []
    whole = Derived.parse

    def counted(self: Derived, raw: bytes) -> object:
        if only is None or self is only:
            parsed.append(raw)
        return whole(self, raw)

    monkeypatch.setattr(Derived, "parse", counted)
    return parsed


def test_another_session_s_appends_are_read_without_parsing_the_file_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader, writer = MemoryStore(tmp_path), MemoryStore(tmp_path)
    writer.remember("fact", "The project uses uv for packaging")
    assert [e.text for _, e in reader.search("packaging")] == ["The project uses uv for packaging"]
    reader.remember("lesson", "Run the slow tests only in CI")  # the reader wrote last once too
    parsed = _count_parses(monkeypatch)
    for name in ("alpha", "bravo", "charlie", "delta"):
        writer.remember("fact", f"the {name} deploy target is {name}.example.org")
        assert reader.search(name)[0][1].text == f"the {name} deploy target is {name}.example.org"
        assert reader.load() == writer.load()
    assert parsed == []  # the reader grew its snapshot by the appended lines each time
    writer.remember("lesson", "Run the slow tests only in CI runners")  # a merge: one line changed
    assert reader.load() == writer.load()
    assert reader.search("runners")[0][1].text == "Run the slow tests only in CI runners"
    assert parsed == []  # the reader replaced that one entry of its snapshot
    writer.forget(writer.load()[0].id)  # a line removed: taken out of the reader's snapshot
    assert reader.load() == writer.load()
    writer.remember("fact", "The docs live in docs/site")
    assert reader.get(writer.last_id or "") is not None
    assert parsed == []
    writer.forget(writer.load()[-1].id)  # the last line removed: the file is read line by line
    assert reader.load() == writer.load()
    assert len(parsed) == 1
    assert reader.load() == MemoryStore(tmp_path).load()


def test_another_session_s_evictions_at_the_cap_are_taken_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the cap every new memory evicts one: the reader appends the one and drops the other,
    and ranks as a fresh store does."""
    reader, writer = MemoryStore(tmp_path, max_entries=30), MemoryStore(tmp_path, max_entries=30)
    kinds = ["fact", "lesson", "preference", "correction"]
    for i in range(30):
        writer.remember(kinds[i % 4], f"rule {i}: the service{i} port is {8000 + i}")
    assert reader.search("service7 port")[0][1].text == "rule 7: the service7 port is 8007"
    parsed = _count_parses(monkeypatch, reader._file.derived)
    for i in range(30, 40):
        writer.remember("fact", f"rule {i}: the worker{i} queue is q{i}")
        assert len(writer.load()) == 30
        assert reader.load() == writer.load()
        fresh = MemoryStore(tmp_path, max_entries=30)
        for query in (f"worker{i} queue", "service port", "rule"):
            assert reader.search(query, top_k=5) == fresh.search(query, top_k=5)
    assert parsed == []  # each time: the new line appended, the evicted one taken out


def _file_of(texts: list[str], top: str = "") -> bytes:
    lines = [
        json.dumps({"id": f"m{i}", "kind": "fact", "text": text, "source": "t", "ts": i}).encode()
        for i, text in enumerate(texts)
    ]
    data = b"".join(dump_lines(lines))
    return data[: -len(b"\n}\n")] + top.encode() + b"\n}\n" if top else data


@pytest.mark.parametrize(
    ("change", "found"),
    [
        (lambda t: t.__setitem__(0, "the first one, changed"), True),
        (lambda t: t.__setitem__(7, "a middle one, much longer than it was before " * 3), True),
        (lambda t: t.__setitem__(-1, "z"), True),
        (lambda t: t.__setitem__(3, t[3] + "x") or t.__setitem__(9, t[9] + "y"), False),  # two lines
        (lambda t: t.pop(4), False),  # a line removed
        (lambda t: t.insert(4, "a new line in the middle"), False),
        (lambda t: t.append("an appended line"), False),
        (lambda t: None, False),  # nothing changed
    ],
)
def test_changed_line_finds_one_line_changed_in_place_and_nothing_else(
    change: Callable[[list[str]], object], found: bool
) -> None:
    texts = [f"memory number {i} " + "abc" * (i % 4) for i in range(12)]
    before = _file_of(texts, top=', "note": "kept"')
    changed = list(texts)
    change(changed)
    after = _file_of(changed, top=', "note": "kept"')
    result = layout.changed_line(before, after)
    if not found:
        assert result is None
        return
    assert result is not None
    old_line, new_line = result
    position = next(i for i, (a, b) in enumerate(zip(texts, changed, strict=True)) if a != b)
    assert json.loads(old_line)["text"] == texts[position]
    assert json.loads(new_line)["text"] == changed[position]


@pytest.mark.parametrize(
    ("position", "appended", "found"),
    [(0, 0, True), (5, 0, True), (5, 1, True), (10, 2, True), (11, 0, False), (11, 1, False)],
)
def test_removed_line_finds_one_line_taken_out_and_lines_appended(
    position: int, appended: int, found: bool
) -> None:
    texts = [f"memory number {i} " + "abc" * (i % 4) for i in range(12)]
    changed = [text for i, text in enumerate(texts) if i != position]
    changed += [f"appended {i}" for i in range(appended)]
    lines = [
        json.dumps({"id": f"m{i}", "kind": "fact", "text": text, "source": "t", "ts": i}).encode()
        for i, text in enumerate(texts)
    ]
    before = b"".join(dump_lines(lines))
    new_lines = [line for i, line in enumerate(lines) if i != position]
    new_lines += [json.dumps({"id": f"a{i}", "text": f"appended {i}"}).encode() for i in range(appended)]
    after = b"".join(dump_lines(new_lines))
    result = layout.removed_line(before, after, layout.tail_of(None))
    if not found:  # the last line: the whole file decides
        assert result is None
        return
    assert result == (lines[position], new_lines[len(lines) - 1 :])


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t.__setitem__(3, "changed"),
        lambda t: t.pop(3) and t.pop(6),
        lambda t: t.pop(3) and t.insert(6, "inserted"),
        lambda t: None,
    ],
)
def test_removed_line_refuses_anything_but_one_line_out_and_lines_appended(
    change: Callable[[list[str]], object],
) -> None:
    texts = [f"memory number {i}" for i in range(12)]
    changed = list(texts)
    change(changed)

    def file_of(texts: list[str]) -> bytes:  # ids follow the texts, not their positions
        return b"".join(dump_lines([json.dumps({"id": text, "text": text}).encode() for text in texts]))

    assert layout.removed_line(file_of(texts), file_of(changed), layout.tail_of(None)) is None


def test_common_prefix_and_suffix_match_a_plain_scan() -> None:
    rng = random.Random(3)
    for _ in range(300):
        size = rng.choice([0, 1, 5, 70_000, 140_000])
        a = bytes(rng.randrange(3) for _ in range(size)) if size < 100 else os.urandom(size)
        b = bytearray(a)
        for _ in range(rng.randint(0, 2)):
            if b:
                b[rng.randrange(len(b))] ^= 1
        if rng.random() < 0.3:
            b += b"tail"
        b = bytes(b)
        plain = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        back = next(
            (i for i, (x, y) in enumerate(zip(reversed(a), reversed(b), strict=False)) if x != y),
            min(len(a), len(b)),
        )
        assert layout.common_prefix(a, b) == plain
        assert layout.common_suffix(a, b) == back


def test_a_foreign_edit_of_one_line_is_taken_in_place_and_others_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another program rewrote one entry in place (same id): the reader replaces that entry; an
    edit that changes an id, breaks a line or touches two lines takes the whole file, and every
    time the reader holds what a fresh store reads."""
    texts = [f"deploy note {i}: the staging host is host{i}.example.org" for i in range(40)]
    path = tmp_path / "memory.json"
    path.write_bytes(_file_of(texts))
    reader = MemoryStore(tmp_path)
    assert reader.search("host7")[0][1].id == "m7"
    parsed = _count_parses(monkeypatch)
    texts[7] = "deploy note 7: the staging host moved to blue7.example.org"
    path.write_bytes(_file_of(texts))
    assert reader.search("blue7")[0][1].id == "m7"
    assert reader.search("host7") == [] or reader.search("host7")[0][1].id != "m7"
    assert parsed == []
    edits = [
        lambda raw: raw.replace(b'"id": "m9"', b'"id": "x9"'),  # another id
        lambda raw: raw.replace(b"host3.example", b"host3\\u00e9example"),  # an escape: same id
        lambda raw: raw.replace(b"host5", b"hostV").replace(b"host6", b"hostW"),  # two lines
        lambda raw: raw.replace(b'"id": "m2", "kind": "fact"', b'"id": "m2", "kind": "opinion"'),
        lambda raw: raw.replace(b'"ts": 11}', b'"ts": 11'),  # a broken line
    ]
    for edit in edits:
        path.write_bytes(edit(path.read_bytes()))
        fresh = MemoryStore(tmp_path / "fresh")
        (tmp_path / "fresh").mkdir(exist_ok=True)
        (tmp_path / "fresh" / "memory.json").write_bytes(path.read_bytes())
        assert reader.load() == fresh.load()
        assert reader.search("staging host") == fresh.search("staging host")


def _deleted_files_held(directory: Path) -> int:
    """How many of this process's descriptors point to a deleted file of `directory`."""
    held = 0
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{name}")
            held += target.startswith(str(directory)) and target.endswith(" (deleted)")
    return held


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd (Linux)")
def test_a_replaced_file_is_closed_off_the_writer_s_path(tmp_path: Path) -> None:
    """The snapshot holds its file open (inode never reused); when a write replaces the file, the
    old one is closed on a thread of its own, and it is closed."""
    store = MemoryStore(tmp_path)
    store.remember("fact", "the first fact about the deploy")
    started: list[int] = []
    real_start = snapshot._thread.start_new_thread

    def recording(function: Callable[..., object], args: tuple[int]) -> int:
        started.append(args[0])
        return real_start(function, args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(snapshot._thread, "start_new_thread", recording)
        for i in range(3):
            store.remember("fact", f"a new fact number {i} about the deploy")
    assert len(started) == 3  # each write's predecessor, closed aside
    deadline = time.monotonic() + 10
    while _deleted_files_held(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _deleted_files_held(tmp_path) == 0
    assert [entry.text for _, entry in store.search("new fact deploy", top_k=3)]


def test_closing_aside_closes_at_once_when_no_thread_can_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """At interpreter exit no thread starts: the descriptor is closed right away instead."""
    read, write = os.pipe()
    os.close(write)

    def refuse(function: Callable[..., object], args: tuple[int]) -> int:
        raise RuntimeError("can't create new thread at interpreter shutdown")

    monkeypatch.setattr(snapshot._thread, "start_new_thread", refuse)
    snapshot.close_aside(read)
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(read)
