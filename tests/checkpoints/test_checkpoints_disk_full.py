"""Checkpoints when the state directory is full, read-only or damaged by a full disk: undo either
does the whole job or changes nothing and says why in one line; a later run recovers."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import filelock
import pytest
from cp_helpers import make, picture, runner_for, turn

from nanohermes.checkpoints import CheckpointError, History


def full_disk(*_: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_undo_on_a_full_disk_restores_nothing_and_can_be_done_later(
    workspace: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoints = make(workspace, isolated_home)
    changes, _ = turn(
        checkpoints,
        runner_for(workspace, checkpoints),
        ("write_file", {"path": "keep.txt", "content": "changed\n"}),
        ("write_file", {"path": "new.txt", "content": "new\n"}),
    )
    assert changes.turn == 1
    after_turn = picture(workspace)
    journal = checkpoints.journal_path.read_bytes()
    history = History(checkpoints)
    with monkeypatch.context() as patch:
        patch.setattr("nanohermes.core.fileio.write_all", full_disk)  # the journal's disk is full
        with pytest.raises(CheckpointError) as failed:
            history.undo(history.plan())
    message = failed.value.one_line()
    assert "No space left on device" in message
    assert "nothing was restored" in message
    assert picture(workspace) == after_turn  # not half undone behind an error
    assert checkpoints.journal_path.read_bytes() == journal
    assert os.listdir(checkpoints.journal_path.parent) == [checkpoints.journal_path.name]  # no temp left

    lines = history.undo(history.plan())  # space freed: the same undo works
    assert lines == ["removed new.txt", "restored keep.txt"]
    assert not (workspace / "new.txt").exists()
    assert [turn.undone for turn in history.turns()] == [True]


@pytest.mark.parametrize("damage", ["lock-is-a-directory", "read-only"])
def test_undo_that_cannot_take_the_checkpoint_lock_is_one_clear_error(
    workspace: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    checkpoints = make(workspace, isolated_home)
    write = ("write_file", {"path": "keep.txt", "content": "x\n"})
    turn(checkpoints, runner_for(workspace, checkpoints), write)
    after_turn = picture(workspace)
    later = make(workspace, isolated_home)  # `nanohermes undo`: a new process
    if damage == "read-only":

        def read_only(*_: object) -> None:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(later.dir / "lock"))

        monkeypatch.setattr(filelock.UnixFileLock, "_acquire", read_only)
    else:
        (later.dir / "lock").unlink()
        (later.dir / "lock").mkdir()
    history = History(later)
    plan = history.plan()
    with pytest.raises(CheckpointError) as failed:
        history.undo(plan)
    why = "Read-only file system" if damage == "read-only" else "Is a directory"
    assert failed.value.one_line() == f"cannot lock checkpoints {later.dir / 'lock'}: {why}"
    assert picture(workspace) == after_turn


def test_a_shadow_repository_left_half_made_by_a_full_disk_is_completed(
    workspace: Path, isolated_home: Path
) -> None:
    original = (workspace / "keep.txt").read_bytes()
    checkpoints = make(workspace, isolated_home)
    git_dir = checkpoints.dir / "git"
    git_dir.mkdir(parents=True)
    subprocess.run(["git", "init", "--quiet"], env=checkpoints.repo().env, cwd=workspace, check=True)
    # What `git init` leaves when the disk fills while it writes its config: HEAD, no config, no objects
    (git_dir / "config").unlink()
    shutil.rmtree(git_dir / "objects")

    changes, _ = turn(
        checkpoints, runner_for(workspace, checkpoints), ("run_shell", {"command": "echo shell > keep.txt"})
    )
    assert changes.notes == ()
    assert changes.files == ("keep.txt",)
    history = History(checkpoints)
    history.undo(history.plan())
    assert (workspace / "keep.txt").read_bytes() == original
