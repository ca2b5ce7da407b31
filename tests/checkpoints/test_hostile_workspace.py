"""A workspace nanohermes did not write: nested repositories with their own config, and file names
at the file system's limits. Checkpoints must run nothing from them and undo must lose nothing."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from cp_helpers import init_git, make, picture, runner_for, turn

from nanohermes.checkpoints import Checkpoints, History


def nested_repository(path: Path) -> None:
    """A repository with one committed file, `x.py`, inside the workspace (vendored, unpacked)."""
    path.mkdir(parents=True)
    (path / "x.py").write_text("x = 1\n")
    init_git(path)


def test_a_nested_repositorys_own_config_never_runs_a_command(workspace: Path, isolated_home: Path) -> None:
    """Its .git/config and .gitattributes come with the files: a filter or fsmonitor there must not run
    (git add used to run `git status` inside a nested repository it had indexed before)."""
    lib = workspace / "vendor" / "lib"
    nested_repository(lib)
    marker = isolated_home / "ran"
    with (lib / ".git" / "config").open("a") as config:
        config.write(
            f'[filter "evil"]\n\tclean = touch {marker}-clean\n[core]\n\tfsmonitor = touch {marker}-fsm\n'
        )
    (lib / ".gitattributes").write_text("* filter=evil\n")
    checkpoints = make(workspace, isolated_home)
    runner = runner_for(workspace, checkpoints)
    for number in range(2):  # a second turn's snapshots find the repository indexed before
        changes, _ = turn(checkpoints, runner, ("run_shell", {"command": f"echo {number} > keep.txt"}))
        assert changes.files == ("keep.txt",)
    assert sorted(path.name for path in isolated_home.glob("ran*")) == []


def test_undo_keeps_the_files_of_a_repository_whose_git_directory_the_turn_removed(
    workspace: Path, isolated_home: Path
) -> None:
    """A nested repository is not snapshotted, so its files were never recorded: once the turn removes
    its .git they show up as new, and undo used to delete them (files that were there before it)."""
    nested_repository(workspace / "lib")
    checkpoints = make(workspace, isolated_home)
    changes, _ = turn(
        checkpoints,
        runner_for(workspace, checkpoints),
        ("run_shell", {"command": "rm -rf lib/.git && echo changed > keep.txt"}),
    )
    assert changes.files == ("keep.txt",)
    History(checkpoints).undo(History(checkpoints).plan())
    assert (workspace / "lib" / "x.py").read_text() == "x = 1\n"


def test_a_file_whose_name_is_as_long_as_the_file_system_allows_is_restored(
    workspace: Path, isolated_home: Path
) -> None:
    """Undo writes beside the file and renames: a temp name built from a 255-byte name was too long."""
    longest = "n" * 255
    (workspace / longest).write_text("original\n")
    before = picture(workspace)
    checkpoints = make(workspace, isolated_home)
    turn(
        checkpoints,
        runner_for(workspace, checkpoints),
        ("run_shell", {"command": f"echo changed > {longest}"}),
    )
    lines = History(checkpoints).undo(History(checkpoints).plan())
    assert lines == [f"restored {longest}"]
    assert picture(workspace) == before
    assert not [path.name for path in workspace.iterdir() if "nanohermes-undo" in path.name]


def test_a_workspace_git_cannot_snapshot_in_time_falls_back_to_copies_once(
    workspace: Path, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Huge files (a 20 GB disk image) make `git add` run past its timeout: every turn's first change
    used to wait that long and then fail, its write not covered either."""
    from nanohermes.checkpoints import shadow

    monkeypatch.setattr(shadow, "GIT_TIMEOUT", 1.0)
    real_git = shutil.which("git")
    slow_git = tmp_path / "slow-git"  # hashes for ever: sleeps in place of `git add`
    slow_git.write_text(
        f'#!/bin/sh\ncase " $* " in *" add "*) exec sleep 60;; esac\nexec "{real_git}" "$@"\n'
    )
    slow_git.chmod(0o755)
    checkpoints = Checkpoints(
        workspace, isolated_home / ".nanohermes", isolated_home / "s.json", git=str(slow_git)
    )
    checkpoints.warm_up()
    assert checkpoints.store == "copies"
    runner = runner_for(workspace, checkpoints)
    started = time.monotonic()
    changes, _ = turn(checkpoints, runner, ("write_file", {"path": "keep.txt", "content": "new\n"}))
    assert time.monotonic() - started < 1.0
    assert changes.files == ("keep.txt",)
    assert "git add took over 1 s, so only files the agent writes or edits are kept" in changes.notes[0]
    History(checkpoints).undo(History(checkpoints).plan())
    assert (workspace / "keep.txt").read_bytes() == b"line one\nline two\r\nno newline at end"
