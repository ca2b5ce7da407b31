"""`nanohermes memory …` through the real console script, in a subprocess, with no endpoint set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from memory_helpers import write_raw

from nanohermes.memory import MemoryStore


def _script() -> str:
    candidate = Path(sys.executable).parent / "nanohermes"
    return str(candidate) if candidate.exists() else "nanohermes"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([_script(), "memory", *args], capture_output=True, text=True, timeout=60, env=env)


@pytest.fixture
def memory_dir(isolated_home: Path) -> Path:
    return isolated_home / ".nanohermes"


def test_path_and_empty_list(memory_dir: Path) -> None:
    result = run("path")
    assert result.returncode == 0
    assert result.stdout.strip() == str(memory_dir / "memory.json")
    listed = run("list")
    assert listed.returncode == 0
    assert "No memories yet" in listed.stdout
    assert not memory_dir.exists()  # looking never creates files


def test_list_search_explain_stats_forget(memory_dir: Path) -> None:
    store = MemoryStore(memory_dir)
    store.remember("preference", "回复一律用中文，代码注释也用中文", source="user")
    store.remember("lesson", "WSL 里 git push 会缺凭据管理器，改用 PowerShell")
    store.remember("fact", "the [bold]markup[/bold] in texts is shown verbatim")
    ids = [e.id for e in store.load()]

    listed = run("list")
    assert listed.returncode == 0
    assert all(entry_id in listed.stdout for entry_id in ids)
    assert "[bold]markup[/bold]" in listed.stdout
    assert "Preference" in listed.stdout

    found = run("search", "git", "push", "--explain")
    assert found.returncode == 0, found.stderr
    assert ids[1] in found.stdout
    assert ids[0] not in found.stdout
    for word in ("idf", "tf", "contribution", "git", "push", "score"):
        assert word in found.stdout
    why = store.explain("git push", ids[1])
    assert f"{why.terms[0].contribution:.4f}" in found.stdout

    assert "No matching memories" in run("search", "kubernetes").stdout

    stats = run("stats")
    assert stats.returncode == 0
    assert "3 of at most 500" in stats.stdout

    forgot = run("forget", ids[2][:6])  # a unique prefix works
    assert forgot.returncode == 0, forgot.stderr
    assert [e.id for e in MemoryStore(memory_dir).load()] == ids[:2]


def test_bad_id_is_one_line_exit_2(memory_dir: Path) -> None:
    MemoryStore(memory_dir).remember("fact", "uses docker compose")
    result = run("forget", "nope-not-an-id")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "no memory with id 'nope-not-an-id'" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(MemoryStore(memory_dir).load()) == 1


def test_usage_errors_exit_2() -> None:
    for args in (("search",), ("forget",), ("frobnicate",), ()):
        result = run(*args)
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr
        assert result.stderr.startswith("nanohermes: error:")


def test_corrupt_file_is_reported_once_and_kept(memory_dir: Path) -> None:
    memory_dir.mkdir(parents=True)
    (memory_dir / "memory.json").write_text("{ not json", encoding="utf-8")
    result = run("list")
    assert result.returncode == 0
    assert "moved to" in result.stderr
    assert "memory.json.broken-" in result.stderr
    assert len(list(memory_dir.glob("memory.json.broken-*"))) == 1
    again = run("list")
    assert "moved to" not in again.stderr


def test_markup_in_ids_and_sources_from_the_file_is_shown_literally(memory_dir: Path) -> None:
    """Ids come from the file (hand-edited, another program): '[/x]' must not reach rich as markup."""
    write_raw(
        memory_dir, [{"id": "[/x]", "kind": "fact", "text": "deploy via make", "source": "[/y]", "ts": 1}]
    )
    listed = run("list")
    assert listed.returncode == 0, listed.stderr
    assert "[/x]" in listed.stdout
    assert "[/y]" in listed.stdout
    found = run("search", "deploy", "--explain")
    assert found.returncode == 0, found.stderr
    assert found.stdout.count("[/x]") == 2  # the table row and the explanation heading
    forgot = run("forget", "[/x]")
    assert forgot.returncode == 0, forgot.stderr
    assert "Forgot [/x] [Fact] deploy via make" in forgot.stdout
    assert MemoryStore(memory_dir).load() == []


def test_add_refuses_a_terminal_escape_sequence_in_one_line(memory_dir: Path) -> None:
    result = run("add", "fact", "build with make \x1b[2J\x1b]52;c;ZXZpbA==\x07 release")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "control character U+001B" in result.stderr
    assert "\x1b" not in result.stderr + result.stdout
    assert "Traceback" not in result.stderr
    assert not (memory_dir / "memory.json").exists()


def test_import_skips_memories_with_control_characters_and_says_which(
    memory_dir: Path, tmp_path: Path
) -> None:
    """A hand-edited or foreign export: the clean memories are imported, each unsafe one is named on
    stderr (escaped, so the terminal shows it instead of obeying it) and counted as refused."""
    as_json = tmp_path / "memories.json"
    as_json.write_text(
        json.dumps(
            [
                {"kind": "fact", "text": "CI runs on every push"},
                {"kind": "fact", "text": "deploy \x1b[2K\x1b[1A with make release"},
                {"kind": "lesson", "text": "bell \x07 here"},
                {
                    "kind": "preference",
                    "text": "answer briefly",
                    "keys": ["short\x1b[8m"],
                    "context": "be \x1b[1mbrief\x1b[0m",
                },
            ]
        ),
        encoding="utf-8",
    )
    result = run("import", str(as_json))
    assert result.returncode == 0, result.stderr
    assert "Imported 2 new memories" in result.stdout
    assert "2 refused" in result.stdout
    notes = result.stderr.splitlines()
    assert len(notes) == 2
    assert "not imported: 'deploy \\x1b[2K\\x1b[1A with make release'" in notes[0]
    assert "U+001B" in notes[0]
    assert "U+0007" in notes[1]
    assert "\x1b" not in result.stderr + result.stdout
    entries = {e.text: e for e in MemoryStore(memory_dir).load()}
    assert sorted(entries) == ["CI runs on every push", "answer briefly"]
    assert entries["answer briefly"].keys == ()
    assert entries["answer briefly"].context == "be brief"

    markdown = tmp_path / "memories.md"
    markdown.write_text(
        "## Global\n\n### Facts\n\n- tests use \x1b[32mpytest\x1b[0m\n- the api listens on 8443\n"
    )
    imported = run("import", str(markdown))
    assert imported.returncode == 0, imported.stderr
    assert "Imported 1 new memory" in imported.stdout
    assert "1 refused" in imported.stdout
    assert "not imported: 'tests use \\x1b[32mpytest\\x1b[0m'" in imported.stderr
    assert "\x1b" not in imported.stderr + imported.stdout
    assert len(MemoryStore(memory_dir).load()) == 3
