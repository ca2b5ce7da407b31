"""Checkpoints through the real tool runner: what a turn records, and undo restoring exact bytes."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest
from cp_helpers import EVERY_CHANGE, git_state, init_git, make, picture, runner_for, turn
from filelock import FileLock

from nanohermes.checkpoints import CheckpointError, Checkpoints, History, manager
from nanohermes.core.cancel import CancelToken
from nanohermes.core.types import ToolCall


@pytest.mark.parametrize("with_git", [True, False], ids=["git-workspace", "plain-workspace"])
def test_a_turn_of_writes_edits_and_shell_changes_is_undone_exactly(
    workspace: Path, isolated_home: Path, with_git: bool
) -> None:
    if with_git:
        init_git(workspace)
    before = picture(workspace)
    repo_before = git_state(workspace) if with_git else None
    checkpoints = make(workspace, isolated_home)
    changes, results = turn(checkpoints, runner_for(workspace, checkpoints), *EVERY_CHANGE)
    assert all(result.ok for result in results), results
    assert set(changes.files) == {
        "new.txt", "private.txt", "keep.txt", "doomed.bin", "moved.txt", "src/renamed.txt",
        "made.bin", "src/util.py", "a/b/c",
    }  # fmt: skip
    assert "build.log" not in changes.files  # .gitignore is honoured
    assert picture(workspace) != before
    if with_git:
        assert git_state(workspace)["head"] == repo_before["head"]  # type: ignore[index]

    lines = History(checkpoints).undo(History(checkpoints).plan())

    after = picture(workspace)
    after["build.log"] = before["build.log"]  # ignored: not the checkpoint's business
    assert after == before
    assert "recreated doomed.bin" in lines
    assert "removed made.bin" in lines
    assert not (workspace / "a").exists()  # directories the turn created are gone again
    if with_git:
        assert git_state(workspace) == repo_before  # HEAD, index, status and every .git file


def test_the_users_git_is_never_touched_while_snapshotting(workspace: Path, isolated_home: Path) -> None:
    init_git(workspace)
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\ntouch HOOK-RAN\n")
    hook.chmod(0o755)
    repo_before = git_state(workspace)
    checkpoints = make(workspace, isolated_home)
    turn(checkpoints, runner_for(workspace, checkpoints), ("write_file", {"path": "x.txt", "content": "x"}))
    assert git_state(workspace)["files"] == repo_before["files"]
    assert not (workspace / "HOOK-RAN").exists()
    shadow = isolated_home / ".nanohermes" / "checkpoints"
    assert list(shadow.glob("*/git/HEAD"))  # the shadow repository lives outside the workspace


def test_undo_twice_walks_back_two_turns(workspace: Path, isolated_home: Path) -> None:
    original = picture(workspace)
    checkpoints = make(workspace, isolated_home)
    runner = runner_for(workspace, checkpoints)
    first, _ = turn(checkpoints, runner, ("edit_file", {"path": "keep.txt", "old": "one", "new": "1"}))
    after_first = picture(workspace)
    second, _ = turn(checkpoints, runner, ("run_shell", {"command": "rm keep.txt; echo n > n.txt"}))
    assert (first.turn, second.turn) == (1, 2)
    history = History(checkpoints)

    history.undo(history.plan())
    assert picture(workspace) == after_first
    history.undo(history.plan())
    assert picture(workspace) == original
    with pytest.raises(CheckpointError, match="nothing to undo"):
        history.plan()
    assert [turn.undone for turn in history.turns()] == [True, True]


def test_undo_to_a_turn_reverts_every_later_turn_at_once(workspace: Path, isolated_home: Path) -> None:
    original = picture(workspace)
    checkpoints = make(workspace, isolated_home)
    runner = runner_for(workspace, checkpoints)
    for n in range(3):
        turn(checkpoints, runner, ("write_file", {"path": "keep.txt", "content": f"v{n}"}))
    history = History(checkpoints)
    with pytest.raises(CheckpointError, match="no turn 7"):
        history.plan(7)
    plan = history.plan(1)
    assert [t.number for t in plan.turns] == [3, 2, 1]
    history.undo(plan)
    assert picture(workspace) == original


def test_a_turn_without_changes_records_nothing_and_a_reading_turn_costs_nothing(
    workspace: Path, isolated_home: Path
) -> None:
    checkpoints = make(workspace, isolated_home)
    runner = runner_for(workspace, checkpoints)
    changes, _ = turn(checkpoints, runner, ("read_file", {"path": "keep.txt"}), ("grep", {"pattern": "x"}))
    assert changes.turn == 0
    assert changes.files == ()
    assert not (isolated_home / ".nanohermes" / "checkpoints").exists()  # no snapshot was even taken
    changes, _ = turn(checkpoints, runner, ("run_shell", {"command": "ls; cat keep.txt"}))
    assert changes.turn == 0
    changes, _ = turn(checkpoints, runner, ("write_file", {"path": "moved.txt", "content": "move me\n"}))
    assert changes.turn == 0  # rewritten with the same bytes: no change
    assert History(checkpoints).turns() == []


def test_a_file_edited_after_the_turn_is_not_overwritten_without_force(
    workspace: Path, isolated_home: Path
) -> None:
    checkpoints = make(workspace, isolated_home)
    turn(
        checkpoints,
        runner_for(workspace, checkpoints),
        ("write_file", {"path": "keep.txt", "content": "agent"}),
    )
    (workspace / "keep.txt").write_text("the user's own edit")
    history = History(checkpoints)
    plan = history.plan()
    assert plan.conflicts == ["keep.txt"]
    diff = history.conflict_diffs(plan)[0]
    assert "+the user's own edit" in diff.lines
    assert "-agent" in diff.lines
    with pytest.raises(CheckpointError, match="keep.txt"):
        history.undo(plan)
    assert (workspace / "keep.txt").read_text() == "the user's own edit"
    history.undo(plan, force=True)
    assert (workspace / "keep.txt").read_bytes() == b"line one\nline two\r\nno newline at end"


@pytest.mark.parametrize("why", ["no-git", "too-many-files"])
def test_fallback_keeps_copies_of_written_files_and_says_shell_is_not_covered(
    workspace: Path, isolated_home: Path, why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = picture(workspace)
    options: dict[str, object] = {"git": None} if why == "no-git" else {}
    if why == "too-many-files":
        monkeypatch.setattr(manager, "FILE_LIMIT", 3)
    checkpoints = make(workspace, isolated_home, **options)
    runner = runner_for(workspace, checkpoints)
    changes, _ = turn(
        checkpoints, runner, *EVERY_CHANGE[:3], ("run_shell", {"command": "echo s > shell.txt"})
    )
    assert checkpoints.store == "copies"
    assert sorted(changes.files) == ["keep.txt", "new.txt", "private.txt"]
    assert len(changes.notes) == 1
    assert "shell commands cannot be undone" in changes.notes[0]
    second, _ = turn(checkpoints, runner, ("write_file", {"path": "new.txt", "content": "v2"}))
    assert second.notes == ()  # said once
    history = History(checkpoints)
    history.undo(history.plan(1))
    now = picture(workspace)
    assert now.pop("shell.txt") == ("file", now_mode(workspace / "shell.txt"), b"s\n")  # not covered
    assert now == original  # contents and exact modes (private.txt is 0600 again)


@pytest.mark.parametrize("with_git", [True, False], ids=["git", "copies"])
def test_an_undo_that_runs_out_of_space_leaves_each_file_whole_and_says_what_it_did(
    workspace: Path, isolated_home: Path, with_git: bool
) -> None:
    resource = pytest.importorskip("resource", reason="needs RLIMIT_FSIZE to fake a full disk")
    big = b"".join(b"line %d of a big file\n" % n for n in range(20_000))  # ~500 KB
    (workspace / "z-big.txt").write_bytes(big)
    original = picture(workspace)
    checkpoints = make(workspace, isolated_home, **({} if with_git else {"git": None}))
    turn(
        checkpoints,
        runner_for(workspace, checkpoints),
        ("write_file", {"path": "keep.txt", "content": "edited"}),
        ("write_file", {"path": "z-big.txt", "content": "shrunk"}),
    )
    history = History(checkpoints)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, hard))  # writes past 256 KB fail: EFBIG
    try:
        with pytest.raises(CheckpointError) as failed:
            history.undo(history.plan())
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    message = failed.value.one_line()
    assert "cannot restore" in message
    assert "z-big.txt" in message
    assert "undo stopped after it had restored keep.txt" in message
    assert (workspace / "z-big.txt").read_bytes() == b"shrunk"  # whole: never half written
    assert not [p.name for p in workspace.iterdir() if "nanohermes" in p.name]  # no temp left
    plan = history.plan()
    assert plan.conflicts == ["keep.txt"]  # already restored: differs from what the turn left
    history.undo(plan, force=True)
    assert picture(workspace) == original


def test_undo_rewrites_a_hard_linked_file_in_place(
    workspace: Path, isolated_home: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "alias.txt"
    os.link(workspace / "moved.txt", outside)
    checkpoints = make(workspace, isolated_home)
    turn(checkpoints, runner_for(workspace, checkpoints), ("run_shell", {"command": "printf x > moved.txt"}))
    assert outside.read_text() == "x"
    History(checkpoints).undo(History(checkpoints).plan())
    assert (workspace / "moved.txt").read_text() == "move me\n"
    assert outside.read_text() == "move me\n"  # still the same file


def now_mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o7777


def test_diff_shows_the_last_turn_or_all_turns(workspace: Path, isolated_home: Path) -> None:
    checkpoints = make(workspace, isolated_home)
    runner = runner_for(workspace, checkpoints)
    turn(checkpoints, runner, ("edit_file", {"path": "src/util.py", "old": "return 1", "new": "return 2"}))
    turn(checkpoints, runner, ("run_shell", {"command": "rm doomed.bin; echo hi > hi.txt"}))
    history = History(checkpoints)
    turns, diffs = history.diff()
    assert [t.number for t in turns] == [2]
    assert {(d.path, d.status) for d in diffs} == {("doomed.bin", "deleted"), ("hi.txt", "added")}
    binary = next(d for d in diffs if d.path == "doomed.bin")
    assert binary.lines[0].startswith("binary file")
    _, every = history.diff(all_turns=True)
    util = next(d for d in every if d.path == "src/util.py")
    assert "-    return 1" in util.lines
    assert "+    return 2" in util.lines


def test_undone_turns_are_told_to_the_model_once(workspace: Path, isolated_home: Path) -> None:
    checkpoints = make(workspace, isolated_home)
    turn(checkpoints, runner_for(workspace, checkpoints), ("write_file", {"path": "n.txt", "content": "n"}))
    assert checkpoints.model_notes() == []
    history = History(checkpoints)
    history.undo(history.plan())
    notes = checkpoints.model_notes()
    assert len(notes) == 1
    assert "reverted" in notes[0]
    assert "n.txt (added)" in notes[0]
    assert checkpoints.model_notes() == []


def test_checkpoints_of_a_deleted_session_are_pruned(workspace: Path, isolated_home: Path) -> None:
    sessions = isolated_home / "sessions"
    sessions.mkdir()
    gone = Checkpoints(workspace, isolated_home / ".nanohermes", sessions / "gone.json")
    (sessions / "gone.json").write_text("{}")
    turn(gone, runner_for(workspace, gone), ("write_file", {"path": "g.txt", "content": "g"}))
    assert gone.journal_path.exists()
    (sessions / "gone.json").unlink()
    running = Checkpoints(workspace, isolated_home / ".nanohermes", sessions / "running.json")
    turn(running, runner_for(workspace, running), ("write_file", {"path": "r.txt", "content": "r"}))
    assert not (sessions / "running.json").exists()  # not saved yet: its turn has just ended
    _age(gone.journal_path)
    repo = gone.repo()
    refs = f"refs/nanohermes/{gone.journal_path.stem}/"
    gone_commits = repo.run("for-each-ref", "--format=%(objectname)", refs).decode().split()
    assert gone_commits
    for folder, _, names in os.walk(repo.git_dir / "objects"):  # old enough for git prune's grace
        for name in names:
            _age(Path(folder) / name)
    in_flight = repo.run("hash-object", "-w", "--stdin", stdin=b"another session's snapshot").decode().strip()
    kept = make(workspace, isolated_home)
    turn(kept, runner_for(workspace, kept), ("write_file", {"path": "k.txt", "content": "k"}))
    assert not gone.journal_path.exists()
    for commit in gone_commits:  # its snapshots no longer take disk space
        assert not (repo.git_dir / "objects" / commit[:2] / commit[2:]).exists()
    assert (repo.git_dir / "objects" / in_flight[:2] / in_flight[2:]).exists()  # too young to be pruned
    assert kept.journal_path.exists()
    assert running.journal_path.exists()  # a fresh journal of a session not saved yet stays
    History(running).undo(History(running).plan())
    assert not (workspace / "r.txt").exists()


def test_no_snapshot_is_pruned_while_another_sessions_turn_runs(workspace: Path, isolated_home: Path) -> None:
    """That turn's "before" snapshot has no ref until it ends, and a turn can outlast the grace."""
    sessions = isolated_home / "sessions"
    sessions.mkdir()
    gone = Checkpoints(workspace, isolated_home / ".nanohermes", sessions / "gone.json")
    turn(gone, runner_for(workspace, gone), ("write_file", {"path": "g.txt", "content": "g"}))
    _age(gone.journal_path)
    repo = gone.repo()
    for folder, _, names in os.walk(repo.git_dir / "objects"):
        for name in names:
            _age(Path(folder) / name)
    snapshot = repo.run("hash-object", "-w", "--stdin", stdin=b"a long turn's snapshot").decode().strip()
    _age(repo.git_dir / "objects" / snapshot[:2] / snapshot[2:])
    with FileLock(str(gone._active.directory / "long-turn.lock")):  # another session's turn, running
        kept = make(workspace, isolated_home)
        turn(kept, runner_for(workspace, kept), ("write_file", {"path": "k.txt", "content": "k"}))
    assert not gone.journal_path.exists()  # its refs are dropped all the same
    assert (repo.git_dir / "objects" / snapshot[:2] / snapshot[2:]).exists()


def test_a_failed_prune_is_a_note_and_the_turn_can_still_be_undone(
    workspace: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail() -> None:
        raise CheckpointError("git for-each-ref failed: disk I/O error")

    checkpoints = make(workspace, isolated_home)
    monkeypatch.setattr(checkpoints, "_prune", fail)
    changes, _ = turn(
        checkpoints, runner_for(workspace, checkpoints), ("write_file", {"path": "p.txt", "content": "p"})
    )
    assert changes.turn == 1
    assert changes.notes == ("old checkpoints were not pruned (git for-each-ref failed: disk I/O error)",)
    History(checkpoints).undo(History(checkpoints).plan())
    assert not (workspace / "p.txt").exists()


def test_pruning_keeps_the_copies_of_a_journal_it_cannot_read(workspace: Path, isolated_home: Path) -> None:
    sessions = isolated_home / "sessions"
    sessions.mkdir()
    other = Checkpoints(workspace, isolated_home / ".nanohermes", sessions / "other.json", git=None)
    (sessions / "other.json").write_text("{}")
    turn(other, runner_for(workspace, other), ("write_file", {"path": "keep.txt", "content": "new"}))
    copies = sorted(p.name for p in other.copies.glob("*/*"))
    assert copies
    other.journal_path.write_text('{"turns": [{"number": "written by a newer version"')
    _age(other.journal_path)
    mine = make(workspace, isolated_home, git=None)
    turn(mine, runner_for(workspace, mine), ("write_file", {"path": "m.txt", "content": "m"}))
    assert set(copies) <= {p.name for p in other.copies.glob("*/*")}


def _age(path: Path, seconds: float = 2 * 3600) -> None:
    then = path.stat().st_mtime - seconds
    os.utime(path, (then, then))


def test_a_broken_snapshot_is_a_note_and_the_turn_still_runs(workspace: Path, isolated_home: Path) -> None:
    state = isolated_home / ".nanohermes"
    state.mkdir()
    (state / "checkpoints").write_text("a file where a directory should be")
    checkpoints = make(workspace, isolated_home)
    changes, results = turn(
        checkpoints, runner_for(workspace, checkpoints), ("write_file", {"path": "n.txt", "content": "n"})
    )
    assert results[0].ok
    assert (workspace / "n.txt").read_text() == "n"
    assert changes.turn == 0
    assert any("checkpoint failed" in note and "cannot be undone" in note for note in changes.notes)


def test_nanohermes_own_files_inside_the_workspace_are_never_snapshotted(tmp_path: Path) -> None:
    home = tmp_path / "home"  # nanohermes started in the home directory: ~/.nanohermes is inside
    state = home / ".nanohermes"
    (state / "sessions").mkdir(parents=True)
    (state / "memory.json").write_text("[]")
    (home / "notes.txt").write_text("n\n")
    checkpoints = Checkpoints(home, state, state / "sessions" / "s.json", private=(state,))
    runner = runner_for(home, checkpoints)
    command = f"echo '[1]' > {state}/memory.json; echo s > {state}/sessions/s.json; echo m > notes.txt"
    first, _ = turn(checkpoints, runner, ("run_shell", {"command": command}))
    assert first.files == ("notes.txt",)
    second, _ = turn(checkpoints, runner, ("write_file", {"path": "again.txt", "content": "a"}))
    assert second.files == ("again.txt",)  # the journal and copies of turn 1 are not changes either
    History(checkpoints).undo(History(checkpoints).plan(1))
    assert (state / "memory.json").read_text() == "[1]\n"  # undo never touches memory or sessions
    assert (home / "notes.txt").read_text() == "n\n"


def test_a_file_name_that_is_not_utf8_is_recorded_and_restored(workspace: Path, isolated_home: Path) -> None:
    original = picture(workspace)
    checkpoints = make(workspace, isolated_home)
    changes, _ = turn(
        checkpoints,
        runner_for(workspace, checkpoints),
        ("run_shell", {"command": "echo x > $(printf 'caf\\351')"}),
    )
    assert len(changes.files) == 1
    assert changes.files == ("caf\ufffd",)  # shown printable; restored by its real name
    History(checkpoints).undo(History(checkpoints).plan())
    assert picture(workspace) == original


@pytest.mark.parametrize("with_git", [True, False], ids=["shadow-git", "copies"])
def test_symlinks_come_back_as_symlinks(workspace: Path, isolated_home: Path, with_git: bool) -> None:
    (workspace / "link-to-keep").symlink_to("keep.txt")
    original = picture(workspace)
    checkpoints = make(workspace, isolated_home, **({} if with_git else {"git": None}))
    runner = runner_for(workspace, checkpoints)
    if with_git:
        turn(checkpoints, runner, ("run_shell", {"command": "rm link-to-keep && ln -s moved.txt new-link"}))
    else:  # copies cover what write_file touches: it writes through the link into keep.txt
        turn(checkpoints, runner, ("write_file", {"path": "keep.txt", "content": "through"}))
    assert picture(workspace) != original
    History(checkpoints).undo(History(checkpoints).plan())
    assert picture(workspace) == original


def test_a_turn_begins_during_the_warm_up_and_its_first_change_waits_for_the_snapshot(
    workspace: Path, isolated_home: Path, tmp_path: Path
) -> None:
    """The warm-up overlaps the model's request (begin_turn never waits for it); the first write
    waits until it is done, so the "before" snapshot is complete and undo restores exactly."""
    real_git = shutil.which("git")
    assert real_git is not None
    gate = tmp_path / "gate"
    slow_git = tmp_path / "slow-git"
    slow_git.write_text(f'#!/bin/sh\nwhile [ ! -e "{gate}" ]; do sleep 0.01; done\nexec "{real_git}" "$@"\n')
    slow_git.chmod(0o755)
    before = picture(workspace)
    checkpoints = make(workspace, isolated_home, git=str(slow_git))
    checkpoints.start_warm_up()
    checkpoints.begin_turn("write while warming up")  # returns although git is held at the gate
    runner = runner_for(workspace, checkpoints)
    call = [ToolCall("call_1", "write_file", json.dumps({"path": "keep.txt", "content": "changed\n"}))]
    writer = threading.Thread(target=lambda: list(runner.run_calls(call, CancelToken())))
    writer.start()
    writer.join(0.5)
    assert writer.is_alive()  # the write waits for the warm-up's snapshot
    assert (workspace / "keep.txt").read_text() != "changed\n"
    gate.touch()
    writer.join(30)
    assert not writer.is_alive()
    assert (workspace / "keep.txt").read_text() == "changed\n"
    changes = checkpoints.end_turn()
    checkpoints.settle()
    assert changes.files == ("keep.txt",)
    History(checkpoints).undo(History(checkpoints).plan())
    assert picture(workspace) == before


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.timeout(60)
def test_a_fifo_gitignore_falls_back_to_copies_instead_of_hanging_the_turn(
    workspace: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nanohermes.checkpoints import shadow

    monkeypatch.setattr(shadow, "COUNT_TIMEOUT", 1.0)
    (workspace / ".gitignore").unlink()
    os.mkfifo(workspace / ".gitignore")  # git waits for a writer when it opens it
    checkpoints = make(workspace, isolated_home)
    changes, results = turn(
        checkpoints,
        runner_for(workspace, checkpoints),
        ("write_file", {"path": "keep.txt", "content": "new"}),
    )
    assert results[0].ok
    assert checkpoints.store == "copies"
    assert "git took over 1 s to list the workspace" in changes.notes[0]
    History(checkpoints).undo(History(checkpoints).plan())
    assert (workspace / "keep.txt").read_bytes() == b"line one\nline two\r\nno newline at end"


def test_files_git_ignores_that_the_agent_writes_or_edits_are_kept_as_copies(
    workspace: Path, isolated_home: Path
) -> None:
    """A turn that overwrites .env or a build log (both .gitignore'd) can be undone: the write tools'
    files that git leaves out are copied; what a shell command does to them is still not covered."""
    (workspace / ".gitignore").write_text("*.log\n.env\nout/\n")
    (workspace / ".env").write_text("API_TOKEN=the user's only copy\n")
    (workspace / ".env").chmod(0o600)
    before = picture(workspace)
    checkpoints = make(workspace, isolated_home)
    changes, results = turn(
        checkpoints,
        runner_for(workspace, checkpoints),
        ("write_file", {"path": ".env", "content": "API_TOKEN=\n"}),
        ("edit_file", {"path": "build.log", "old": "old", "new": "new"}),
        ("write_file", {"path": "out/made.log", "content": "made"}),
        ("edit_file", {"path": "keep.txt", "old": "line one", "new": "LINE ONE"}),
        ("write_file", {"path": "keep.txt", "content": "rewritten"}),
    )
    assert all(result.ok for result in results), results
    assert sorted(changes.files) == [".env", "build.log", "keep.txt", "out/made.log"]
    turns, diffs = History(checkpoints).diff()
    assert {diff.path: diff.status for diff in diffs} == {
        ".env": "modified", "build.log": "modified", "keep.txt": "modified", "out/made.log": "added"
    }  # fmt: skip
    assert any("-API_TOKEN=the user's only copy" in diff.lines for diff in diffs)
    lines = History(checkpoints).undo(History(checkpoints).plan())
    assert "removed out/made.log" in lines
    assert picture(workspace) == before  # exact bytes and modes, .env 0600 again


@pytest.mark.parametrize("with_git", [True, False], ids=["git", "copies"])
def test_undo_never_removes_a_file_through_a_directory_swapped_for_a_symlink(
    workspace: Path, isolated_home: Path, tmp_path: Path, with_git: bool
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("precious\n")
    checkpoints = make(workspace, isolated_home, **({} if with_git else {"git": None}))
    turn(
        checkpoints,
        runner_for(workspace, checkpoints),
        ("write_file", {"path": "sub/f.txt", "content": "precious\n"}),  # the turn creates sub/f.txt
    )
    shutil.rmtree(workspace / "sub")
    (workspace / "sub").symlink_to(outside)  # after the turn: the same name, now leading outside
    history = History(checkpoints)
    plan = history.plan()
    assert plan.conflicts == ["sub/f.txt"]  # not the file the turn left, though its bytes are the same
    with pytest.raises(CheckpointError, match="sub is a symlink now"):
        history.undo(plan, force=True)
    assert (outside / "f.txt").read_text() == "precious\n"
