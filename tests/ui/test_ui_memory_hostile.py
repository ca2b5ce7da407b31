"""`/memory`, the other slash commands and `nanohermes memory` fed hostile input: a pasted screenful,
escape sequences in a file name, an endless pipe, a file holding more memories than the store keeps.
Each gets one short line and loses nothing."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from test_ui_commands import Harness
from ui_fakes import plain_console

from nanohermes.config.options import MemoryArgs
from nanohermes.config.settings import Settings, load_settings
from nanohermes.memory import MemoryStore
from nanohermes.ui.memory_cmd import MAX_IMPORT_BYTES, run_memory_command

PASTED = "x" * 100_000


def _cli(args: MemoryArgs, settings: Settings | None = None) -> tuple[int, str]:
    console, out = plain_console(200)
    return run_memory_command(args, settings or Settings(), console), out.getvalue()


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_memory_import_from_an_endless_pipe_stops_at_the_size_limit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # `nanohermes memory import - < /dev/zero` read until memory ran out (internal error: MemoryError)
    _stdin(monkeypatch, b"\0" * (MAX_IMPORT_BYTES + 1))
    assert _cli(MemoryArgs("import", "-"))[0] == 2
    assert "standard input is larger than 16 MiB" in _error_line(capsys)


def test_memory_import_from_a_pipe_that_is_not_utf8_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _stdin(monkeypatch, b'[{"kind": "fact", "text": "caf\xe9"}]')
    assert _cli(MemoryArgs("import", "-"))[0] == 2
    assert "standard input is not UTF-8 text" in _error_line(capsys)


def test_memory_import_of_more_memories_than_the_cap_keeps_the_store_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = load_settings({"memory_max_entries": 5})
    store = MemoryStore(settings.memory_dir, max_entries=5)
    assert store.remember("preference", "answer in short sentences", source="user")
    many = tmp_path / "many.json"
    many.write_text(json.dumps([{"kind": "fact", "text": f"fact {i} about topic{i}"} for i in range(6)]))
    assert _cli(MemoryArgs("import", str(many)), settings)[0] == 2
    assert "holds 6 memories, more than memory_max_entries (5); nothing imported" in _error_line(capsys)
    assert [entry.text for entry in store.load()] == ["answer in short sentences"]


def test_memory_import_says_how_many_memories_the_cap_evicted(tmp_path: Path) -> None:
    settings = load_settings({"memory_max_entries": 5})
    store = MemoryStore(settings.memory_dir, max_entries=5)
    for i in range(4):
        assert store.remember("fact", f"older fact {i} about thing{i}", source="user", scope="global")
    three = tmp_path / "three.json"
    preferences = [{"kind": "preference", "text": f"preference {i} on style{i}"} for i in range(3)]
    three.write_text(json.dumps(preferences))
    code, shown = _cli(MemoryArgs("import", str(three)), settings)
    assert code == 0
    assert "Imported 3 new memories" in shown
    assert "2 memories evicted at the cap (memory_max_entries)" in " ".join(shown.split())
    assert len(store.load()) == 5


def test_memory_command_errors_show_escape_sequences_in_a_file_name_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = "notes\x1b]0;pwned\x07\u202e.md"
    assert _cli(MemoryArgs("import", str(tmp_path / hostile)))[0] == 2
    line = _error_line(capsys)
    assert "notes\\x1b]0;pwned\\x07\\u202e.md: no such file" in line
    assert "\x1b" not in line
    assert "\u202e" not in line
    (tmp_path / hostile).write_text("## Global\n\n### Fact\n\n- the build uses make\n", encoding="utf-8")
    code, shown = _cli(MemoryArgs("import", str(tmp_path / hostile)))
    assert code == 0
    assert "Imported 1 new memory from" in shown
    assert "\x1b" not in shown
    assert "\u202e" not in shown


@pytest.mark.parametrize(
    "args",
    [MemoryArgs("forget", PASTED), MemoryArgs("add", "some text", kind=PASTED), MemoryArgs("import", PASTED)],
    ids=["forget", "add", "import"],
)
def test_memory_command_error_for_a_pasted_argument_stays_short(
    args: MemoryArgs, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _cli(args)[0] == 2
    assert len(_error_line(capsys)) < 500


def test_memory_search_for_a_pasted_query_repeats_only_its_start() -> None:
    code, shown = _cli(MemoryArgs("search", PASTED))
    assert code == 0
    assert "(100,000 characters)" in " ".join(shown.split())
    assert len(shown) < 500


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("/permission " + PASTED, "unknown permission mode 'xxx"),
        ("/memory forget " + PASTED, "no memory with id 'xxx"),
        ("/" + "x" * 100_000, "unknown command /xxx"),
        ("/model " + PASTED, "model set to 'xxx"),
    ],
    ids=["permission", "forget", "unknown", "model"],
)
def test_slash_command_repeats_only_the_start_of_a_pasted_argument(command: str, expected: str) -> None:
    h = Harness()
    h.runtime.store = MemoryStore(h.runtime.settings.memory_dir)
    shown = h.run(command)
    assert shown.startswith(expected)
    assert len(shown) < 300, shown[:300]  # a short line, not a screenful


def test_model_name_with_an_escape_sequence_is_shown_escaped_once() -> None:
    # it read `model name '\\x1b[2J'`: terminal_safe, then repr, doubled the backslash
    shown = Harness().run("/model \x1b[2J")
    assert shown.strip() == "model name '\\x1b[2J' must not contain control or invisible characters"


def test_a_tab_between_a_slash_command_and_its_argument_separates_them() -> None:
    # a pasted `/model<TAB>name` was «unknown command /model<TAB>name»
    h = Harness()
    assert "model set to gpt-test" in h.run("/model\tgpt-test")
    assert h.runtime.agent.model == "gpt-test"
    h.runtime.store = MemoryStore(h.runtime.settings.memory_dir)
    assert "No memories yet" in h.run("/memory\tlist")
