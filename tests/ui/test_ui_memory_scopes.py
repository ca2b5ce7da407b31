"""What memory did, in the REPL (SPEC §3.10): the dim «recalled» line, /memory last, add, --all."""

from __future__ import annotations

import json
from pathlib import Path

from test_ui_commands import Harness
from ui_fakes import plain_console

from nanohermes.core.events import MemoryRecalled, RecalledMemory
from nanohermes.memory import MemoryStore
from nanohermes.ui.render import Renderer

RECALLED = (
    RecalledMemory("aa11bb22", "preference", "Always indent with tabs.", 2.5, ("tab ← tabs",)),
    RecalledMemory("cc33dd44", "fact", "Deploy with make release.", 1.25, ("deploy",)),
)


def test_recalled_line_before_the_answer() -> None:
    console, out = plain_console(100)
    Renderer(console).handle(MemoryRecalled(RECALLED))
    assert out.getvalue().strip() == "memory: 2 recalled · /memory last"


def test_memory_last_lists_scores_and_matched_terms(tmp_path: Path) -> None:
    h = Harness(MemoryStore(tmp_path))
    assert "no memories were recalled" in h.run("/memory last")
    h.runtime.agent.recalled = RECALLED  # type: ignore[attr-defined]
    shown = h.run("/memory last")
    assert "2.50" in shown
    assert "tab ← tabs" in shown
    assert "Deploy with make release." in shown
    assert "cc33dd44" in shown


def test_memory_add_list_all_and_forget_across_projects(tmp_path: Path) -> None:
    alpha = MemoryStore(tmp_path / "mem", project="example.org/alpha")
    assert alpha.remember("fact", "alpha deploys with make release", source="auto")
    beta = MemoryStore(tmp_path / "mem", project="example.org/beta")
    h = Harness()
    h.runtime.store = beta
    assert "Saved" in h.run("/memory add preference answer in short sentences")
    assert "this project" in h.run("/memory add --project fact beta listens on 8080")
    assert "Duplicate of" in h.run("/memory add preference answer in short sentences")
    assert "unknown memory kind" in h.run("/memory add habit stretch every hour")
    listed = h.run("/memory list")
    assert "beta listens on 8080" in listed
    assert "make release" not in listed
    assert "1 more in other projects" in listed
    every = h.run("/memory list --all")
    assert "make release" in every
    assert "example.org/alpha" in every
    assert "No matching memories" in h.run("/memory search release")
    assert "make release" in h.run("/memory search release --all")
    assert "Forgot" in h.run(f"/memory forget {alpha.load()[0].id}")
    assert [e.source for e in beta.load()] == ["user", "user"]


def test_memory_replace_history_team_and_the_scope_of_last(tmp_path: Path) -> None:
    from nanohermes.memory import TeamStore

    (tmp_path / "repo").mkdir()
    h = Harness()
    h.runtime.store = MemoryStore(tmp_path / "mem", team=TeamStore(tmp_path / "repo"))
    assert "Saved" in h.run("/memory add preference run the tests with pytest")
    old = h.runtime.store.load()[0].id
    assert "the old one is kept" in h.run(f"/memory replace {old} run the tests with unittest")
    assert "already replaced" in h.run(f"/memory replace {old} run the tests with nox")
    assert "with pytest" not in h.run("/memory list")
    assert "replaced by" in h.run("/memory list --history")
    assert "with pytest" in h.run("/memory search pytest --history")
    assert "team" in h.run("/memory add --team fact CI runs make check")
    assert "CI runs make check" in h.run("/memory list")
    h.runtime.agent.recalled = (RecalledMemory("ee55ff66", "fact", "CI runs make check", 1.0, (), "team"),)  # type: ignore[attr-defined]
    assert "team" in h.run("/memory last")
    h.runtime.store = MemoryStore(tmp_path / "mem")
    assert "--team needs a git repository" in h.run("/memory add --team fact CI runs make check")


def _written_by_an_older_version(home: Path, text: str, **fields: str) -> Path:
    """~/.nanohermes/memory.json holding one fact `text` as an older version (or a person) wrote it:
    `remember` refuses control characters now, a file may still hold them."""
    memory_dir = home / ".nanohermes"
    memory_dir.mkdir()
    entry = {"id": "e5c4p3", "kind": "fact", "text": text, "source": "auto", "ts": 1, **fields}
    (memory_dir / "memory.json").write_text(json.dumps({"version": 1, "entries": [entry]}), encoding="utf-8")
    return memory_dir


def test_memory_command_shows_escape_sequences_in_a_memory_instead_of_obeying_them(
    tmp_path: Path, isolated_home: Path
) -> None:
    from nanohermes.config.options import MemoryArgs
    from nanohermes.config.settings import Settings
    from nanohermes.ui.memory_cmd import run_memory_command

    text = "build with make \x1b[2K\x1b]52;c;ZXZpbA==\x1b\\ release"
    memory_dir = _written_by_an_older_version(isolated_home, text)
    assert [e.text for e in MemoryStore(memory_dir).load()] == [text]
    settings = Settings()
    for args in (MemoryArgs("list"), MemoryArgs("search", "release")):
        console, out = plain_console(300)
        assert run_memory_command(args, settings, console) == 0
        assert "\x1b" not in out.getvalue()
        assert "make \\x1b[2K\\x1b]52;c;ZXZpbA==\\x1b\\ release" in out.getvalue()


def test_memory_add_refuses_a_terminal_escape_sequence_in_one_line(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "mem")
    h = Harness()
    h.runtime.store = store
    shown = h.run("/memory add fact deploy \x1b[2J\x1b[3J with make release")
    assert "control character U+001B" in shown
    assert "\x1b" not in shown
    assert len(shown.strip().splitlines()) == 1
    assert store.load() == []
    assert "Saved" in h.run("/memory add fact deploy with make release")  # the REPL goes on


def test_memory_list_all_shows_a_hostile_project_key_instead_of_obeying_it(tmp_path: Path) -> None:
    # a key written by an older version, or by hand: the REPL shows it like `nanohermes memory list`
    hostile = "example.org/x\x1b]0;pwned\x1b\\\x1b[2J"
    evil = MemoryStore(tmp_path / "mem", project=hostile)
    assert evil.remember("fact", "the evil project builds with make", source="user", scope="project")
    h = Harness()
    h.runtime.store = MemoryStore(tmp_path / "mem", project="example.org/mine")
    for command in ("/memory list --all", "/memory search evil --all"):
        shown = h.run(command)
        assert "the evil project builds with make" in shown
        assert "\x1b" not in shown
        assert "example.org/x\\x1b]0;pwned" in shown


def test_memory_add_keeps_flag_like_words_inside_the_text(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "mem", project="example.org/mine")
    h = Harness()
    h.runtime.store = store
    assert "(fact, global)" in h.run("/memory add fact never pass --project to the old release tool")
    assert "(fact, global)" in h.run("/memory add fact ship with ./ship.sh --all to reach every region")
    assert "(fact, this project)" in h.run("/memory add fact beta listens on port 8080 --project")
    assert [(e.text, e.project) for e in store.load()] == [
        ("never pass --project to the old release tool", None),
        ("ship with ./ship.sh --all to reach every region", None),
        ("beta listens on port 8080", "example.org/mine"),
    ]


def test_memory_export_to_a_terminal_shows_escape_sequences_and_a_file_keeps_them(
    tmp_path: Path, isolated_home: Path
) -> None:
    import os
    import subprocess
    import sys

    import pexpect

    text = "build with make \x1b[2J\x1b]0;owned\x07 release"
    _written_by_an_older_version(isolated_home, text, project="example.org/\x1b[31mred")
    command = str(Path(sys.executable).with_name("nanohermes"))
    term = pexpect.spawn(command, ["memory", "export"], env=dict(os.environ), cwd=str(tmp_path), timeout=20)
    shown = term.read().decode("utf-8")  # up to EOF, bounded by the timeout
    term.close()
    assert term.exitstatus == 0
    assert "\x1b" not in shown
    assert "\x07" not in shown
    assert "make \\x1b[2J\\x1b]0;owned\\x07 release" in shown
    assert "## Project example.org/\\x1b[31mred" in shown
    to_file = subprocess.run(
        [command, "memory", "export"], cwd=tmp_path, capture_output=True, text=True, timeout=20, check=True
    )
    assert f"- {text}\n" in to_file.stdout  # a file keeps the texts as stored
