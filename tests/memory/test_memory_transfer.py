"""memory export / import (SPEC §3.10) through the public pieces: Markdown round trip, JSON, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nanohermes.errors import MemoryRejected
from nanohermes.memory import Kind, MemoryStore
from nanohermes.memory.transfer import export_markdown, import_memories, parse_import


def test_markdown_round_trip_keeps_kind_scope_keys_and_context(tmp_path: Path) -> None:
    source = MemoryStore(tmp_path / "a", project="example.org/alpha")
    source.remember(
        Kind.FACT, "deploys go through make release", keys=["ship", "上线"], context="how to ship?"
    )
    source.remember(Kind.PREFERENCE, "answer in short sentences")
    source.remember(Kind.LESSON, "the flaky test needs a fixed seed", scope="global")
    text = export_markdown(source.load())
    target = MemoryStore(tmp_path / "b")
    result = import_memories(target, parse_import(text))
    assert (result.added, result.merged, result.refused) == (3, 0, [])

    def shape(store: MemoryStore) -> set[tuple[object, ...]]:
        return {(e.id, e.kind, e.text, e.keys, e.context, e.project) for e in store.load()}

    assert shape(target) == shape(source)
    again = import_memories(target, parse_import(text))
    assert (again.added, again.merged) == (0, 3)
    assert len(target.load()) == 3


def test_hand_edited_markdown_wrapped_lines_labels_and_plurals() -> None:
    items = parse_import(
        "# my notes\n\nsome prose\n\n## Global\n\n### 偏好\n\n- 回复一律用中文\n\n"
        "## Project example.org/x\n\n### Lessons\n\n- run the migrations\n  before the tests\n"
        "  - keys: db, migrate\n"
    )
    assert [(i.kind, i.text, i.keys, i.project) for i in items] == [
        (Kind.PREFERENCE, "回复一律用中文", (), None),
        (Kind.LESSON, "run the migrations before the tests", ("db", "migrate"), "example.org/x"),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("## Global\n- a memory before any kind\n", "line 2"),
        ("## Global\n### Habit\n- stretch\n", "line 2: unknown kind heading"),
        ("## Somewhere\n", "line 1"),
        ('[{"kind": "habit", "text": "x"}]', "item 1"),
        ("[1, 2", "not valid JSON"),
    ],
)
def test_bad_imports_name_the_place(text: str, message: str) -> None:
    with pytest.raises(MemoryRejected, match=message):
        parse_import(text)


def test_a_whole_memory_json_imports_what_it_can_use() -> None:
    data = {
        "version": 1,
        "entries": [
            {"kind": "fact", "text": "the api listens on 8443", "project": "example.org/x"},
            {"kind": "habit", "text": "a kind from a newer version"},
            "not an entry",
        ],
    }
    items = parse_import(json.dumps(data))
    assert [(i.text, i.project) for i in items] == [("the api listens on 8443", "example.org/x")]
