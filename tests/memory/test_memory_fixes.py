"""One test per FIX of SPEC §3 (the seed's defects), and the store's file format guarantees."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from memory_helpers import raw_entry, write_raw

from nanohermes.core.errors import MemoryRejected, StoreError, ToolError
from nanohermes.memory import (
    BLOCK_START,
    INJECT_CHAR_BUDGET,
    MAX_TEXT,
    Kind,
    MemoryStore,
    forget_memory,
    normalize,
    recall_for_turn,
    render_block,
    save_memory,
)
from nanohermes.memory.entry import Entry
from nanohermes.memory.text import cut_text, is_duplicate


def test_short_chinese_preferences_dedupe_by_weight_not_bytes(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    assert store.remember("preference", "回复一律用中文")
    assert not store.remember("preference", "用中文")  # 3 CJK chars weigh 12: a duplicate now
    assert len(store.load()) == 1
    assert store.remember("preference", "use tabs")  # English keeps the seed's 12 characters
    assert store.remember("preference", "always use tabs for Makefiles")
    assert len(store.load()) == 3


def test_negation_is_never_a_duplicate(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    assert store.remember("preference", "use pytest for the unit tests")
    assert store.remember("correction", "don't use pytest for the unit tests")
    assert store.remember("preference", "用 pytest 跑单元测试")
    assert store.remember("correction", "不要用 pytest 跑单元测试")
    assert len(store.load()) == 4
    assert is_duplicate("never push to main", "never push to main!")  # both negated: still duplicates


def test_duplicate_promotes_kind_and_keeps_longer_text(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.remember("fact", "the API server listens on port 8080", source="auto")
    first = store.load()[0]
    assert not store.remember("preference", "the API server listens on port 8080.", source="user")
    after = store.load()[0]
    assert after.kind is Kind.PREFERENCE
    assert after.source == "user"
    assert after.id == first.id
    assert not store.remember("fact", "API server listens on port 8080")
    assert store.load()[0].kind is Kind.PREFERENCE  # never demoted
    assert store.load()[0].text == "the API server listens on port 8080."


def test_forget_removes_one_entry(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.remember("fact", "alpha uses poetry")
    store.remember("fact", "beta uses uv")
    target = store.load()[0]
    assert store.forget(target.id)
    assert [e.text for e in MemoryStore(tmp_path).load()] == ["beta uses uv"]
    assert not store.forget(target.id)
    assert not store.forget("")
    assert "Forgot memory" in forget_memory(store, store.load()[0].id)
    with pytest.raises(ToolError, match="no memory with id"):
        forget_memory(store, "deadbeef")


def test_ids_resolve_exactly_or_by_a_unique_prefix_of_four(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    for n in range(40):  # enough ids that some share a 1-character prefix
        store.remember("fact", f"service {n} listens on port {8000 + n}")
    ids = [e.id for e in store.load()]
    first = ids[0]
    assert store.matching_ids(first) == [first]
    assert store.matching_ids(f"  {first[:4]} ") == [i for i in ids if i.startswith(first[:4])]
    assert store.matching_ids(first.upper()) == [first]  # typed from a screen in capitals
    assert store.matching_ids(first[:3]) == []  # too short to mean anything
    assert store.matching_ids("zzzz") == []
    shared = next(i[:1] for i in ids if sum(j.startswith(i[:1]) for j in ids) > 1)
    assert store.matching_ids(shared) == []
    unique = next(i for i in ids if sum(j.startswith(i[:4]) for j in ids) == 1)
    assert f"Forgot memory {unique} " in forget_memory(store, unique[:4])  # the model may use a prefix too
    assert unique not in [e.id for e in store.load()]


def test_cut_at_sentence_boundary_never_mid_word() -> None:
    sentence = "Run the migrations before the tests. "
    text = sentence * 20
    cut = cut_text(text, MAX_TEXT)
    assert len(cut) <= MAX_TEXT
    assert cut.endswith("tests.")
    words = "deployment " * 60
    cut_words = cut_text(words, MAX_TEXT)
    assert len(cut_words) <= MAX_TEXT
    assert cut_words.endswith("deployment…")
    zh = "部署前先运行 dry-run，确认输出无误后再执行正式发布；" * 20
    cut_zh = cut_text(zh, MAX_TEXT)
    assert len(cut_zh) <= MAX_TEXT
    assert cut_zh[-1] in "；，"


def test_remember_cuts_long_texts(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.remember("lesson", "Always pin the toolchain version. " * 40)
    assert len(store.load()[0].text) <= MAX_TEXT
    assert store.load()[0].text.endswith("version.")


def test_short_message_keeps_previous_block(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.remember("preference", "answer in Chinese with short code comments")
    block = recall_for_turn(store, "please answer in Chinese", "").block
    assert BLOCK_START in block
    assert recall_for_turn(store, "继续", block).block == block  # «continue» no longer forgets everything
    assert recall_for_turn(store, "ok go on", block).block == block
    assert recall_for_turn(store, "now let us refactor the parser module", block).block == ""
    assert recall_for_turn(store, "Chinese", "").block != ""  # short, but it has hits


def test_render_block_respects_budget_and_labels() -> None:
    entries = [Entry(f"i{i}", Kind.LESSON, "x" * 390, "t", i) for i in range(10)]
    block = render_block(entries, "zh")
    lines = [line for line in block.splitlines() if line.startswith("- [")]
    assert all(line.startswith("- [经验] ") for line in lines)
    assert sum(len(line) + 1 for line in lines) <= INJECT_CHAR_BUDGET
    assert len(lines) == INJECT_CHAR_BUDGET // (len(lines[0]) + 1)


def test_legacy_file_loads_with_stable_derived_ids(tmp_path: Path) -> None:
    legacy = [
        {
            "kind": "correction",
            "text": "部署脚本默认先 dry-run，确认后再真正执行",
            "source": "auto",
            "ts": 1761200000,
        },
        {"kind": "lesson-learned", "text": "pin node 20"},
        {"kind": "bogus", "text": "dropped"},
        {"kind": "fact", "text": "   "},
    ]
    write_raw(tmp_path, legacy, version=None)
    first = MemoryStore(tmp_path).load()
    second = MemoryStore(tmp_path).load()
    assert [e.id for e in first] == [e.id for e in second]
    assert [(e.kind, e.source, e.ts) for e in first] == [
        (Kind.CORRECTION, "auto", 1761200000),
        (Kind.LESSON, "", 0),
    ]
    store = MemoryStore(tmp_path)
    assert store.forget(first[1].id)  # the id shown before the first write works
    data = json.loads((tmp_path / "memory.json").read_text(encoding="utf-8"))
    assert data["version"] == 1
    assert data["entries"][0]["id"] == first[0].id


def test_newer_format_is_read_but_never_overwritten(tmp_path: Path) -> None:
    path = write_raw(tmp_path, [raw_entry("fact", "from the future", 5, "abcd1234")], version=2)
    before = path.read_bytes()
    store = MemoryStore(tmp_path)
    assert [e.text for e in store.load()] == ["from the future"]
    with pytest.raises(StoreError, match="newer nanohermes"):
        store.remember("fact", "something else entirely")
    assert path.read_bytes() == before


def test_files_are_private(tmp_path: Path) -> None:
    directory = tmp_path / "fresh" / "mem"
    store = MemoryStore(directory)
    assert not directory.exists()  # reading never creates anything
    assert store.load() == []
    assert not directory.exists()
    store.remember("fact", "the repo uses ruff")
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600


def test_cache_is_not_fooled_by_same_size_same_mtime_rewrite(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.remember("fact", "the cache key includes the inode AAAA")
    assert store.search("AAAA")
    st = os.stat(store.path)
    other = MemoryStore(tmp_path / "elsewhere")
    other.remember("fact", "placeholder")
    data = store.path.read_bytes().replace(b"AAAA", b"BBBB")
    temp = tmp_path / "rewrite.tmp"
    temp.write_bytes(data)
    os.replace(temp, store.path)
    os.utime(store.path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime, same size
    assert os.stat(store.path).st_size == st.st_size
    assert os.stat(store.path).st_mtime_ns == st.st_mtime_ns
    assert store.search("AAAA") == []
    assert store.search("BBBB")[0][1].text.endswith("BBBB")


def test_unknown_kind_and_rejected_texts(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    with pytest.raises(ToolError, match="preference, correction, lesson, fact"):
        save_memory(store, "opinion", "tabs are better")
    with pytest.raises(MemoryRejected, match="empty"):
        store.remember("fact", "   ")
    with pytest.raises(MemoryRejected, match="no words"):
        store.remember("fact", "！！！")
    with pytest.raises(ToolError, match="invisible Unicode"):
        save_memory(store, "fact", "run make\u200b install")
    assert store.load() == []
    assert Kind.parse("Lesson_Learned") is Kind.LESSON
    assert Kind.parse("FEEDBACK") is Kind.CORRECTION
    assert Kind.parse("project") is Kind.FACT
    assert Kind.parse("pref") is Kind.PREFERENCE
    assert Kind.parse("nope") is None
    assert Kind.parse(3) is None


def test_kind_words_find_every_entry_of_a_kind(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.remember("preference", "short answers")
    store.remember("preference", "中文回复")
    store.remember("fact", "uses docker compose")
    for query in ("偏好", "preference", "Preference"):
        assert {e.kind for _, e in store.search(query)} == {Kind.PREFERENCE}
        assert len(store.search(query)) == 2


def test_keys_are_searchable_but_never_shown(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.remember("lesson", "发布文章前先运行 dry-run", keys=["deploy", "上线", "publish"])
    hits = store.search("deploy the blog")
    assert hits
    assert hits[0][1].keys == ("deploy", "上线", "publish")
    assert "deploy" not in store.retrieve_block("deploy")
    assert normalize("A b，C。") == "abc"


def test_tie_break_prefers_newer_entries(tmp_path: Path) -> None:
    write_raw(
        tmp_path, [raw_entry("fact", "uses redis cache", 10), raw_entry("fact", "uses redis queue", 20)]
    )
    hits = MemoryStore(tmp_path).search("redis")
    assert [e.ts for _, e in hits] == [20, 10]
    assert hits[0][0] == hits[1][0]
