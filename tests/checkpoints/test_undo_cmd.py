"""`nanohermes undo` in-process: which journal it picks, and what it prints."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cp_helpers import runner_for, turn

from nanohermes.checkpoints import Checkpoints, for_session
from nanohermes.config.options import UndoArgs
from nanohermes.config.settings import Settings
from nanohermes.ui.undo_cmd import run_undo_command


def test_a_session_resumed_in_another_workspace_undoes_where_it_last_changed_files(
    tmp_path: Path, isolated_home: Path
) -> None:
    state, session = isolated_home / ".nanohermes", isolated_home / "sessions" / "s.json"
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    first, second = sorted(
        (Checkpoints(one, state, session), Checkpoints(two, state, session)), key=lambda cp: cp.journal_path
    )  # the second recorded sorts last: picking the first journal found is wrong
    for checkpoints in (first, second):
        turn(
            checkpoints,
            runner_for(checkpoints.workspace, checkpoints),
            ("write_file", {"path": "a", "content": "x"}),
        )
    then = second.journal_path.stat().st_mtime - 60
    os.utime(first.journal_path, (then, then))
    assert for_session(state, session, first.workspace).workspace == first.workspace  # here first
    assert for_session(state, session, tmp_path).workspace == second.workspace


def test_escape_sequences_in_file_names_prompts_and_diffs_are_printed_visibly(
    tmp_path: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    checkpoints = Checkpoints(workspace, settings.state_dir, settings.sessions_dir / "s.json")
    write = ("write_file", {"path": "evil\x1b[2K.txt", "content": "turn\n"})
    turn(checkpoints, runner_for(workspace, checkpoints), write, prompt="do \x1b]52;c;ZXZpbA==\x1b\\ it")
    (workspace / "evil\x1b[2K.txt").write_text("user \x1b[1A\x1b[2K edit\n")

    assert run_undo_command(UndoArgs(list_only=True), settings) == 0
    assert run_undo_command(UndoArgs(session="s"), settings) == 1  # a later edit: nothing restored
    printed = capsys.readouterr()
    assert "\x1b" not in printed.out + printed.err
    assert "do \\x1b]52;c;ZXZpbA==\\x1b\\ it" in printed.out
    assert "evil\\x1b[2K.txt" in printed.out
    assert "+user \\x1b[1A\\x1b[2K edit" in printed.err
