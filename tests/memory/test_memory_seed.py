"""The seed article's nine unit tests, kept, plus the four it says were missing."""

from __future__ import annotations

from pathlib import Path

from memory_helpers import raw_entry, write_raw

from nanohermes.memory import (
    BLOCK_END,
    BLOCK_START,
    EXCERPT_CHARS,
    MAX_ENTRIES,
    Kind,
    MemoryStore,
    excerpt_from,
    parse_distill,
    render_block,
    save_memory,
    search_memory,
    set_block,
    tokenize,
    worth_distilling,
)


def test_tokenize_handles_cjk_bigrams_and_ascii_words() -> None:
    assert tokenize("NanoHermes") == ["nanohermes"]
    assert tokenize("a Vite") == ["vite"]
    assert tokenize("120_000") == ["120", "000"]
    assert tokenize("前端用 Vite 构建") == ["前端", "端用", "vite", "构建"]
    assert tokenize("好") == ["好"]
    assert tokenize("用vite构建，好！") == ["用", "vite", "构建", "好"]
    assert tokenize("café Привет x") == ["café", "привет"]
    assert tokenize("カタカナ 한국어") == ["カタ", "タカ", "カナ", "한국", "국어"]


def test_round_trips_through_the_store_and_dedupes(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    assert store.remember(Kind.LESSON, "测试前先跑 cargo test", "tool")
    assert not store.remember(Kind.LESSON, "测试前先跑 cargo test！", "tool")
    assert not store.remember(Kind.LESSON, "测试前先跑 cargo test 避免回归", "auto")
    reloaded = MemoryStore(tmp_path).load()
    assert len(reloaded) == 1
    assert reloaded[0].text == "测试前先跑 cargo test 避免回归"  # FIX: the longer text is kept
    assert reloaded[0].source == "auto"


def test_trims_oldest_lessons_before_touching_preferences(tmp_path: Path) -> None:
    rows = [raw_entry("preference", "用户偏好简洁的中文回复", ts=1)]
    rows += [
        raw_entry("lesson", f"经验{i}：某个只对本次有意义的细节", ts=100 + i) for i in range(MAX_ENTRIES - 1)
    ]
    write_raw(tmp_path, rows)
    store = MemoryStore(tmp_path)
    assert store.remember(Kind.LESSON, "最新的经验：部署前先跑 dry-run")
    entries = store.load()
    assert len(entries) == MAX_ENTRIES
    assert any(e.kind is Kind.PREFERENCE for e in entries)
    texts = {e.text for e in entries}
    assert "经验0：某个只对本次有意义的细节" not in texts  # the oldest lesson went
    assert "最新的经验：部署前先跑 dry-run" in texts  # the newest stayed (the seed dropped it)


def test_bm25_ranks_relevant_entries_first(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.remember("fact", "前端用 Vite + React，后端 Django")
    store.remember("lesson", "WSL 里 git push 会缺凭据管理器，改用 PowerShell")
    store.remember("preference", "回复使用中文，代码注释也用中文")
    hits = store.search("git push 失败")
    assert hits[0][1].text.startswith("WSL")
    assert all("Vite" not in entry.text for _, entry in hits)
    assert store.search("kubernetes") == []


def test_block_round_trip_replaces_instead_of_accumulating(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.remember("preference", "回复使用中文")
    block = store.retrieve_block("中文")
    assert block.startswith(BLOCK_START)
    assert block.endswith(BLOCK_END)
    assert "- [Preference] 回复使用中文" in block
    system = set_block("You are helpful.", block)
    again = set_block(system, block)
    assert again == system
    assert again.count(BLOCK_START) == 1
    assert set_block(again, "") == "You are helpful."
    assert set_block("", block) == block
    assert set_block("base\n" + BLOCK_START + "\nleft open", "") == "base"  # no end marker
    assert render_block([]) == ""


def test_parses_distill_output_tolerantly() -> None:
    fenced = 'Sure, here you go:\n```json\n[{"kind": "lesson", "text": "跑测试前先 build"}]\n```'
    assert [(d.kind, d.text) for d in parse_distill(fenced)] == [(Kind.LESSON, "跑测试前先 build")]
    wrapped = '{"memories": [{"kind": "pref", "text": "short answers"}]}'
    assert [(d.kind, d.text) for d in parse_distill(wrapped)] == [(Kind.PREFERENCE, "short answers")]
    assert parse_distill('{"entries": [{"kind": "weird", "text": "x uses uv"}]}')[0].kind is Kind.FACT
    assert parse_distill('{"foo": [{"kind": "fact", "text": "t"}]}') == []
    assert parse_distill("nothing durable here") == []
    assert parse_distill('[{"kind": "fact", "text": ""}, {"kind": "fact"}, 3, "s"]') == []
    assert parse_distill("[]") == []
    assert parse_distill("[" * 100000) == []  # never raises, even on pathological input
    keyed = parse_distill('[{"kind": "fact", "text": "用 GitHub Pages 发布", "keys": ["deploy", "上线", 5]}]')
    assert keyed[0].keys == ("deploy", "上线")


def test_distill_gate_skips_small_talk_but_keeps_corrections() -> None:
    assert not worth_distilling("继续", had_tools=False)
    assert not worth_distilling("ok thanks", had_tools=False)
    assert worth_distilling("不对", had_tools=False)
    assert worth_distilling("别这样", had_tools=False)
    assert worth_distilling("no, use tabs", had_tools=False)
    assert worth_distilling("Don't", had_tools=False)
    assert not worth_distilling("nothing", had_tools=False)  # whole words only
    assert worth_distilling("继续", had_tools=True)
    assert worth_distilling("please look at the failing build and fix it", had_tools=False)


def test_tools_save_and_search_work_against_a_store(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    assert (
        save_memory(store, "lesson", "deploy with make deploy-prod") == "Saved (lesson); 1 memories in total"
    )
    assert (
        save_memory(store, "experience", "deploy with make deploy-prod!")
        == "Duplicate of an existing memory, nothing added; 1 memories in total"
    )
    found = search_memory(store, "deploy")
    assert "kind=lesson" in found
    assert "deploy with make deploy-prod" in found
    assert f"id={store.load()[0].id}" in found
    assert search_memory(store, "unrelated words") == "no matching memories"


def test_excerpt_skips_system_and_images() -> None:
    messages = [
        {"role": "system", "content": "SYSTEM PROMPT"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {}}],
        },
        {"role": "assistant", "content": "", "tool_calls": [{"id": "1"}]},
        {"role": "tool", "tool_call_id": "1", "content": "x" * 5000},
        {"role": "assistant", "content": "done"},
    ]
    text = excerpt_from(messages, EXCERPT_CHARS)
    assert "SYSTEM PROMPT" not in text
    assert "image_url" not in text
    assert text.splitlines()[0] == "[user] look"
    assert text.splitlines()[1] == "[tool result] " + "x" * 1200
    assert text.splitlines()[2] == "[assistant] done"


# ---- the four tests the article says were missing ----------------------------------------------


def test_eviction_order_is_highest_rank_then_oldest_then_earliest(tmp_path: Path) -> None:
    rows = [raw_entry("fact", f"fact number {i} about the build", ts=50) for i in range(3)]
    rows += [raw_entry("fact", "an older fact about the cache", ts=10)]
    rows += [raw_entry("lesson", f"lesson number {i} about tests", ts=1) for i in range(MAX_ENTRIES - 4)]
    write_raw(tmp_path, rows)
    store = MemoryStore(tmp_path)
    store.remember("preference", "prefer short answers")
    texts = [e.text for e in store.load()]
    assert "an older fact about the cache" not in texts  # the oldest fact, not the oldest lesson
    store.remember("preference", "prefer tabs in Makefiles")
    texts = [e.text for e in store.load()]
    assert "fact number 0 about the build" not in texts  # tie on ts: earliest in the file
    assert "fact number 1 about the build" in texts
    assert len(texts) == MAX_ENTRIES


def test_corrupt_file_is_moved_aside_and_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    path.write_text('{"entries": [{"kind": "fact", "text": "half', encoding="utf-8")
    notices: list[str] = []
    store = MemoryStore(tmp_path, on_notice=notices.append)
    assert store.load() == []
    broken = list(tmp_path.glob("memory.json.broken-*"))
    assert len(broken) == 1
    assert broken[0].read_text(encoding="utf-8").endswith('"half')
    assert len(notices) == 1
    assert str(broken[0]) in notices[0]
    assert "\n" not in notices[0]
    assert store.remember("fact", "a new fact after the corruption")
    assert store.load()[0].text == "a new fact after the corruption"
    assert broken[0].read_text(encoding="utf-8").endswith('"half')  # evidence kept
    store.load()
    assert len(notices) == 1  # told once


def test_long_conversation_excerpt_keeps_the_conclusion() -> None:
    messages = [{"role": "user", "content": "GOAL: migrate the build to uv"}]
    for i in range(30):
        messages.append({"role": "tool", "tool_call_id": str(i), "content": f"output {i} " + "y" * 900})
    messages.append({"role": "assistant", "content": "CONCLUSION: use uv sync --frozen in CI"})
    text = excerpt_from(messages, EXCERPT_CHARS)
    assert "GOAL: migrate" in text
    assert "CONCLUSION: use uv sync" in text
    assert "messages left out" in text
    assert len(text) <= EXCERPT_CHARS + 60
