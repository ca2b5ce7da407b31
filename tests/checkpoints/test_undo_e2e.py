"""End to end: `nanohermes -p` turns against the fake endpoint, then `nanohermes undo` in a subprocess."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_process import run_nanohermes
from cp_helpers import EVERY_CHANGE, git_state, init_git, picture
from fake_server import FakeServer
from fake_server import fake_server as fake_server


def nh(cwd: Path, *args: str, server: FakeServer | None = None) -> subprocess.CompletedProcess[str]:
    return run_nanohermes(server, cwd, *args)


def agent_turn(
    server: FakeServer, cwd: Path, session: str, *calls: tuple[str, dict[str, Any]]
) -> dict[str, Any]:
    """One `-p --json` turn that makes `calls` one after another, then answers "done"."""
    for call in calls:
        server.push_tool_calls([call])
    server.push_text("done")
    done = nh(
        cwd, "-p", "change things", "--yes", "--json", "--no-memory", "--session", session, server=server
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("with_git", [True, False], ids=["git-workspace", "plain-workspace"])
def test_nanohermes_undo_restores_exact_bytes_after_a_p_turn(
    fake_server: FakeServer, workspace: Path, with_git: bool
) -> None:
    if with_git:
        init_git(workspace)
    before = picture(workspace)
    repo_before = git_state(workspace) if with_git else None
    payload = agent_turn(fake_server, workspace, "e2e", *EVERY_CHANGE)
    assert "doomed.bin" in payload["files_changed"]
    assert "made.bin" in payload["files_changed"]
    assert "build.log" not in payload["files_changed"]
    assert not (workspace / "doomed.bin").exists()

    listed = nh(workspace, "undo", "--list")
    assert listed.returncode == 0, listed.stderr
    assert "turn 1" in listed.stdout
    assert "deleted  doomed.bin" in listed.stdout
    undone = nh(workspace, "undo")
    assert undone.returncode == 0, undone.stderr
    assert "recreated doomed.bin" in undone.stdout

    after = picture(workspace)
    after["build.log"] = before["build.log"]  # .gitignore'd: not recorded, not restored
    assert after == before
    if with_git:
        assert git_state(workspace) == repo_before
    again = nh(workspace, "undo")
    assert again.returncode == 1
    assert "nothing to undo" in again.stderr


def test_undo_twice_the_model_is_told_and_a_user_edit_needs_force(
    fake_server: FakeServer, workspace: Path
) -> None:
    original = picture(workspace)
    agent_turn(fake_server, workspace, "two", ("write_file", {"path": "keep.txt", "content": "first\n"}))
    after_first = picture(workspace)
    quiet = agent_turn(fake_server, workspace, "two", ("read_file", {"path": "keep.txt"}))
    assert quiet["files_changed"] == []  # a turn without changes adds no checkpoint
    agent_turn(fake_server, workspace, "two", ("run_shell", {"command": "echo second > keep.txt"}))
    assert nh(workspace, "undo", "--list").stdout.count("turn ") == 2

    (workspace / "keep.txt").write_text("my own edit\n")
    refused = nh(workspace, "undo", "--session", "two")
    assert refused.returncode == 1
    assert "keep.txt" in refused.stderr
    assert "--force" in refused.stderr
    assert "+my own edit" in refused.stderr
    assert (workspace / "keep.txt").read_text() == "my own edit\n"

    assert nh(workspace, "undo", "--session", "two", "--force").returncode == 0
    assert picture(workspace) == after_first
    assert nh(workspace, "undo").returncode == 0
    assert picture(workspace) == original

    fake_server.push_text("noted")
    nh(workspace, "-p", "what now?", "--no-memory", "--session", "two", server=fake_server)
    last_user = [m for m in fake_server.bodies[-1]["messages"] if m["role"] == "user"][-1]["content"]
    assert last_user.count("reverted the file changes") == 2
    assert last_user.endswith("what now?")


def test_undo_to_and_errors_are_one_line(fake_server: FakeServer, workspace: Path, tmp_path: Path) -> None:
    original = picture(workspace)
    for n in range(3):
        agent_turn(fake_server, workspace, "many", ("write_file", {"path": f"f{n}.txt", "content": "x"}))
    bad = nh(workspace, "undo", "--to", "9")
    assert bad.returncode == 1
    assert "no turn 9" in bad.stderr
    assert nh(workspace, "undo", "--to", "1").returncode == 0
    assert picture(workspace) == original
    usage = nh(workspace, "undo", "--to", "0")
    assert usage.returncode == 2
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    none = nh(elsewhere, "undo")
    assert none.returncode == 1
    assert "no checkpoints in this workspace" in none.stderr
    assert len(none.stderr.strip().splitlines()) == 1


def test_undo_list_of_a_session_that_changed_no_files_says_so_in_one_line(
    fake_server: FakeServer, workspace: Path
) -> None:
    agent_turn(fake_server, workspace, "quiet", ("read_file", {"path": "keep.txt"}))
    for args in (("--session", "quiet"), ()):
        listed = nh(workspace, "undo", *args, "--list")
        assert listed.returncode == 0, listed.stderr
        assert listed.stderr == ""
        assert len(listed.stdout.strip().splitlines()) == 1
        assert "changed files" in listed.stdout
    listed = nh(workspace, "undo", "--session", "quiet", "--list")
    assert listed.stdout == "no turn of session quiet changed files\n"
    refused = nh(workspace, "undo", "--session", "quiet")  # undoing, not listing, is still an error
    assert refused.returncode == 1
    assert len(refused.stderr.strip().splitlines()) == 1
