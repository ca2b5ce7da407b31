"""HookRunner: matchers, the JSON event, exit codes, timeouts and Ctrl-C killing the whole process
group, bounded stderr, stdin never blocking, the sandbox refusing; the ToolRunner's two call sites."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from test_tool_shell import is_gone, wait_gone
from tool_helpers import FakeApprover, args, call, results, run

from nanohermes.config.hooks_config import Hooks
from nanohermes.core.cancel import CancelToken
from nanohermes.core.events import Note
from nanohermes.tools import ToolRunner
from nanohermes.tools.hooks import OUTPUT_CAP, HookRunner
from nanohermes.tools.sandbox import Sandbox

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell")


def hook_runner(workspace: Path, sandbox: Sandbox | None = None, **events: Any) -> HookRunner:
    session = workspace.parent / "sessions" / "s1.json"
    return HookRunner(Hooks(**events), sandbox or Sandbox(), workspace, session, verbose=False)


def test_tool_hooks_get_the_event_and_only_matching_ones_run(workspace: Path) -> None:
    hooks = hook_runner(
        workspace,
        pre_tool=[
            {"command": "cat > shell.json", "matcher": "run_shell|write_file"},
            {"command": "touch mcp.txt", "matcher": "mcp__.*"},
            "cat > every.json",
        ],
    )
    outcome = hooks.run("pre_tool", CancelToken(), call("run_shell", args(command="ls")))
    assert (outcome.reason, outcome.notes) == ("", ())
    assert not (workspace / "mcp.txt").exists()
    assert (workspace / "every.json").read_text() == (workspace / "shell.json").read_text()
    assert json.loads((workspace / "shell.json").read_text()) == {
        "hook_event_name": "pre_tool",
        "session_id": "s1",
        "transcript_path": str(workspace.parent / "sessions" / "s1.json"),
        "cwd": str(workspace),
        "tool_name": "run_shell",
        "tool_input": {"command": "ls"},
    }


def test_exit_2_decides_only_where_it_can_and_other_failures_are_notes(workspace: Path) -> None:
    blocking = ["echo first >&2; exit 2", "touch not-reached"]
    hooks = hook_runner(workspace, user_prompt=blocking, stop=["echo busy >&2; exit 2", "exit 7"])
    blocked = hooks.run("user_prompt", CancelToken(), prompt="hi")
    assert blocked.reason == "first"
    assert not (workspace / "not-reached").exists()  # the first block ends the run
    stop = hooks.run("stop", CancelToken())
    assert stop.reason == ""
    assert [(note.level, note.text.split(" in ")[0]) for note in stop.notes] == [
        ("warning", "hook stop 'echo busy >&2; exit 2': exit 2"),
        ("warning", "hook stop 'exit 7': exit 7"),
    ]
    assert stop.notes[0].text.endswith(": busy")


def test_verbose_notes_each_run(workspace: Path) -> None:
    hooks = HookRunner(Hooks(stop=["true"]), Sandbox(), workspace, workspace / "s.json", verbose=True)
    (note,) = hooks.run("stop", CancelToken()).notes
    assert note.level == "debug"
    assert note.text.startswith("hook stop 'true': exit 0 in ")


def test_a_timeout_kills_the_hook_and_everything_it_started(workspace: Path) -> None:
    hooks = hook_runner(
        workspace, stop=[{"command": "sleep 60 & echo $! > child.pid; sleep 60", "timeout": 0.5}]
    )
    started = time.monotonic()
    (note,) = hooks.run("stop", CancelToken()).notes
    assert time.monotonic() - started < 10
    assert note == Note(
        "hook stop 'sleep 60 & echo $! > child.pid; sleep 60' timed out after 0.5 s and was stopped",
        "warning",
    )
    assert wait_gone(int((workspace / "child.pid").read_text()), 5)


def test_ctrl_c_stops_a_running_hook_at_once_and_says_nothing(workspace: Path) -> None:
    hooks = hook_runner(workspace, pre_tool=["echo $$ > hook.pid; sleep 60", "touch not-reached"])
    cancel = CancelToken()
    threading.Timer(0.5, cancel.cancel).start()
    started = time.monotonic()
    outcome = hooks.run("pre_tool", cancel, call("list_files"))
    assert time.monotonic() - started < 10
    assert (outcome.reason, outcome.notes) == ("", ())
    assert not (workspace / "not-reached").exists()
    assert is_gone(int((workspace / "hook.pid").read_text()))


def test_stderr_is_read_bounded_and_a_big_event_never_blocks_a_hook_that_ignores_stdin(
    workspace: Path,
) -> None:
    hooks = hook_runner(workspace, post_tool=["head -c 5000000 /dev/zero | tr '\\0' x >&2; exit 2"])
    big = call("write_file", args(path="a", content="y" * 2_000_000))
    outcome = hooks.run("post_tool", CancelToken(), big, tool_response="z" * 1_000_000)
    assert outcome.reason.startswith("xxx")
    assert OUTPUT_CAP <= len(outcome.reason) < OUTPUT_CAP + 100  # head and tail around a note
    assert "bytes omitted" in outcome.reason


def test_a_hook_the_sandbox_refuses_is_a_note(workspace: Path) -> None:
    refusing = Sandbox("bwrap", active=False, network=False, problem="bubblewrap (bwrap) is not installed")
    hooks = hook_runner(workspace, refusing, session_start=["touch ran"])
    (note,) = hooks.run("session_start", CancelToken()).notes
    assert note.level == "warning"
    assert note.text.startswith(
        "hook session_start 'touch ran' not run: shell command refused: sandbox = bwrap"
    )
    assert not (workspace / "ran").exists()


def test_the_runner_asks_no_approval_for_a_blocked_call_and_adds_post_tool_feedback(workspace: Path) -> None:
    approver = FakeApprover()
    runner = ToolRunner(workspace, permission="ask", approver=approver, store=None)
    runner.hooks = hook_runner(
        workspace,
        pre_tool=[{"command": "echo 'not that file' >&2; exit 2", "matcher": "write_file"}],
        post_tool=["echo 'checked' >&2; exit 2"],
    )
    (workspace / "f.txt").write_text("hi\n")
    got = results(
        run(runner, [call("write_file", args(path="x", content="y")), call("read_file", args(path="f.txt"))])
    )
    assert approver.requests == []
    assert got[0].content == "ERROR: a pre_tool hook blocked this call: not that file"
    assert not (workspace / "x").exists()
    assert got[1].ok
    assert got[1].content.endswith("1\thi\n\npost_tool hook: checked")
