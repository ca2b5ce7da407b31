"""Checkpoint state damaged on disk (a kill, a full disk, a bad copy): later turns are still recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
from cp_helpers import make, runner_for, turn

from nanohermes.checkpoints import History


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_broken_shadow_index_is_rebuilt(workspace: Path, isolated_home: Path, damage: str) -> None:
    first = make(workspace, isolated_home)
    turn(first, runner_for(workspace, first), ("write_file", {"path": "keep.txt", "content": "v1\n"}))
    index = first.repo().index
    index.write_bytes(index.read_bytes()[:30] if damage == "truncated" else b"not an index at all" * 50)

    later = make(workspace, isolated_home)  # the next run of the session
    changes, _ = turn(
        later, runner_for(workspace, later), ("write_file", {"path": "keep.txt", "content": "v2\n"})
    )
    assert changes.notes == ()
    assert changes.files == ("keep.txt",)
    history = History(later)
    history.undo(history.plan())
    assert (workspace / "keep.txt").read_text() == "v1\n"


@pytest.mark.parametrize(("damage", "said"), [("cut short", "unreadable"), ("wrong shape", "malformed (")])
def test_a_corrupt_journal_is_set_aside_and_later_turns_can_be_undone(
    workspace: Path, isolated_home: Path, damage: str, said: str
) -> None:
    first = make(workspace, isolated_home)
    turn(first, runner_for(workspace, first), ("write_file", {"path": "keep.txt", "content": "v1\n"}))
    data = first.journal_path.read_bytes()
    first.journal_path.write_bytes(data[:40] if damage == "cut short" else b'{"session": "s"}')

    later = make(workspace, isolated_home)
    changes, _ = turn(
        later, runner_for(workspace, later), ("write_file", {"path": "keep.txt", "content": "v2\n"})
    )
    assert changes.files == ("keep.txt",)
    assert any("moved to" in note and said in note for note in changes.notes)
    assert first.journal_path.with_name(first.journal_path.name + ".corrupt").is_file()
    history = History(later)
    history.undo(history.plan())
    assert (workspace / "keep.txt").read_text() == "v1\n"


def test_a_private_folder_that_is_a_link_loop_does_not_stop_checkpoints(tmp_path: Path) -> None:
    """memory_dir as a link loop ended every run in `internal error: RuntimeError: Symlink loop`
    (the checkpoints resolved it to keep it out of snapshots)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("one\n")
    loop = workspace / "loop"
    (workspace / "other").symlink_to(loop)
    loop.symlink_to(workspace / "other")
    checkpoints = make(workspace, tmp_path / "home", private=(loop,))
    changes, _ = turn(
        checkpoints, runner_for(workspace, checkpoints), ("write_file", {"path": "a.txt", "content": "two\n"})
    )
    assert changes.turn == 1
    assert changes.files == ("a.txt",)
