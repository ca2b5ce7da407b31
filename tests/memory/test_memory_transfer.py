"""memory export / import (SPEC §3.10) through the public pieces: Markdown round trip, JSON, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nanohermes.core.errors import MemoryRejected
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


def test_export_of_line_breaks_and_markdown_syntax_round_trips(tmp_path: Path) -> None:
    """Texts, contexts and project keys a hand-edited (or older) memory.json may hold with line breaks
    or Markdown of the export's own: each stays one memory, in its scope, on re-import."""
    memory_dir = tmp_path / "a"
    MemoryStore(memory_dir).remember(Kind.FACT, "seed")  # creates the file in the current format
    data = json.loads((memory_dir / "memory.json").read_text(encoding="utf-8"))
    base = data["entries"][0]
    shapes = [
        ("first line\n## Project injected\n### Fact\n- fake memory", "why\u2028- context: no", None),
        ("# not a heading", "", "example.org/a\n## Global"),
        ('- looks like an item\r\n  - keys: ["forged"]', "", None),
    ]
    data["entries"] = [
        dict(base, id=f"m{n}", text=text, context=context, project=project)
        for n, (text, context, project) in enumerate(shapes)
    ]
    (memory_dir / "memory.json").write_text(json.dumps(data), encoding="utf-8")
    exported = export_markdown(MemoryStore(memory_dir).load(), "a\nb")
    back = {(i.text, i.context, i.keys, i.project) for i in parse_import(exported)}
    assert back == {
        ("first line ## Project injected ### Fact - fake memory", "why - context: no", (), None),
        ("# not a heading", "", (), "example.org/a ## Global"),
        ('- looks like an item   - keys: ["forged"]', "", (), None),
    }
    target = MemoryStore(tmp_path / "b")
    assert import_memories(target, parse_import(exported)).added == 3
    # what `remember` stores of each original text, in the original's scope
    assert {(e.text, e.project) for e in target.load()} == {(" ".join(t.split()), p) for t, _, _, p in back}
