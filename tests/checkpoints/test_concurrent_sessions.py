"""Two sessions changing one workspace at once: each undo takes back its own turn's changes only."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from cli_process import child_env, nanohermes_command, run_nanohermes
from cp_helpers import runner_for
from fake_server import FakeServer
from fake_server import fake_server as fake_server

from nanohermes.checkpoints import Checkpoints, History
from nanohermes.core.cancel import CancelToken
from nanohermes.core.types import ToolCall
from nanohermes.tools import ToolRunner

WAIT = "for i in $(seq 1200); do [ -e {0} ] && break; sleep 0.05; done"
"""A shell command that waits (at most a minute) for a file to appear: orders two processes' turns."""


def call(runner: ToolRunner, name: str, args: dict[str, Any]) -> None:
    for _ in runner.run_calls([ToolCall("call_1", name, json.dumps(args))], CancelToken()):
        pass


def sessions(tmp_path: Path, workspace: Path) -> tuple[Checkpoints, Checkpoints]:
    state = tmp_path / "state"
    return Checkpoints(workspace, state, tmp_path / "a.json"), Checkpoints(
        workspace, state, tmp_path / "b.json"
    )


def test_undo_of_an_overlapping_turn_leaves_the_other_sessions_write(tmp_path: Path, workspace: Path) -> None:
    a, b = sessions(tmp_path, workspace)
    run_a, run_b = runner_for(workspace, a), runner_for(workspace, b)
    a.begin_turn("session a")
    call(run_a, "write_file", {"path": "new.txt", "content": "from a\n"})
    b.begin_turn("session b")
    call(run_b, "edit_file", {"path": "keep.txt", "old": "line one", "new": "LINE ONE (b)"})
    assert a.end_turn().files == ("new.txt",)
    assert b.end_turn().files == ("keep.txt",)

    history = History(a)
    history.undo(history.plan())
    assert not (workspace / "new.txt").exists()
    assert (workspace / "keep.txt").read_bytes().startswith(b"LINE ONE (b)\n")
    history = History(b)
    history.undo(history.plan())
    assert (workspace / "keep.txt").read_bytes().startswith(b"line one\n")


def test_a_turn_inside_another_marks_it_shared_and_its_shell_changes_are_not_claimed(
    tmp_path: Path, workspace: Path
) -> None:
    a, b = sessions(tmp_path, workspace)
    run_a, run_b = runner_for(workspace, a), runner_for(workspace, b)
    a.begin_turn("session a")
    call(run_a, "run_shell", {"command": "echo a > by_a.txt"})
    b.begin_turn("session b")
    call(run_b, "write_file", {"path": "by_b.txt", "content": "b\n"})
    assert b.end_turn().files == ("by_b.txt",)
    ended = a.end_turn()
    assert ended.files == ()
    assert any("another nanohermes session" in note for note in ended.notes)
    # both turns over: the next turn of a is on its own again
    a.begin_turn("alone")
    call(run_a, "run_shell", {"command": "echo again > by_a.txt"})
    assert a.end_turn().files == ("by_a.txt",)


def test_a_session_that_died_mid_turn_does_not_make_later_turns_shared(
    tmp_path: Path, workspace: Path
) -> None:
    a, b = sessions(tmp_path, workspace)
    b.begin_turn("b, then b's process goes away")
    call(runner_for(workspace, b), "write_file", {"path": "by_b.txt", "content": "b\n"})
    b._active.release()  # what the OS does to the lock of a killed process
    a.begin_turn("session a")
    call(runner_for(workspace, a), "run_shell", {"command": "echo a > by_a.txt"})
    assert a.end_turn().files == ("by_a.txt",)


def test_two_processes_at_once_each_undo_reverts_only_its_own_turn(
    fake_server: FakeServer, workspace: Path
) -> None:
    """`nanohermes -p` in session A writes a file and waits; meanwhile B (another process, another
    session) edits another file; then `nanohermes undo --session A` must leave B's edit alone."""
    (workspace / "shared.txt").write_text("original\n")
    fake_server.push_tool_calls([("write_file", {"path": "a.txt", "content": "from A\n"})])
    fake_server.push_tool_calls([("run_shell", {"command": WAIT.format("b-done")})])
    fake_server.push_text("A done")
    other = FakeServer()
    try:
        other.push_tool_calls([("run_shell", {"command": WAIT.format("a.txt")})])
        other.push_tool_calls([("write_file", {"path": "shared.txt", "content": "from B\n"})])
        other.push_tool_calls([("run_shell", {"command": "touch b-done"})])
        other.push_text("B done")
        flags = ("--yes", "--no-memory", "--session")
        first = subprocess.Popen(
            nanohermes_command(fake_server, "-p", "turn of A", *flags, "A"),
            cwd=workspace,
            env=child_env(None),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            second = run_nanohermes(other, workspace, "-p", "turn of B", *flags, "B")
            out, err = first.communicate(timeout=90)
        finally:
            first.kill()
            first.wait()
    finally:
        other.close()
    assert second.returncode == 0, second.stderr
    assert first.returncode == 0, err
    assert (workspace / "shared.txt").read_text() == "from B\n"

    undone = run_nanohermes(None, workspace, "undo", "--session", "A")
    assert undone.returncode == 0, undone.stderr
    assert not (workspace / "a.txt").exists()
    assert (workspace / "shared.txt").read_text() == "from B\n"
    undone = run_nanohermes(None, workspace, "undo", "--session", "B")
    assert undone.returncode == 0, undone.stderr
    assert (workspace / "shared.txt").read_text() == "original\n"
