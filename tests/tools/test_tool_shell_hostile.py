"""run_shell against hostile commands and arguments: nothing it starts may keep nanohermes busy, and
every failure is a one-line ToolError."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest
from test_tool_shell import PROMPTLY, cancel_when_written, is_gone, pid_in, wait_for, wait_gone

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import Cancelled, ToolError
from nanohermes.tools import reaper, shell
from nanohermes.tools.base import CallContext
from nanohermes.tools.shell import ShellTool, shown_seconds

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/fd; POSIX process groups")


def open_pipes() -> set[str]:
    """This process's descriptors that are pipe ends."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}").startswith("pipe:"):
                found.add(name)
        except OSError:  # the descriptor listdir itself used, closed meanwhile
            continue
    return found


@pytest.mark.timeout(60)
@pytest.mark.skipif(shutil.which("setsid") is None, reason="needs setsid (util-linux)")
def test_an_escaped_writer_is_no_longer_read_once_the_call_returns(workspace: Path) -> None:
    """A process that left the group and the tag cannot be killed; but once the call has returned its
    output is not read any more: no thread of ours keeps pumping it (a CPU's worth for `yes`) and no
    pipe stays open, so its next write fails and `yes` ends."""
    pidfile = workspace / "yes.pid"
    pipes_before = open_pipes()
    command = f"env -i setsid sh -c 'echo $$ > {pidfile}; exec yes' & echo started"
    out = ShellTool(workspace).run_shell(command, ctx=CallContext())
    assert wait_for(lambda: pidfile.exists() and pidfile.read_text().strip().isdigit())
    pid = pid_in(pidfile)
    try:
        assert out.startswith("exit code: 0")
        assert "could not be stopped and may still run" in out
        assert wait_gone(pid, PROMPTLY), "the escaped writer is still being read"
        assert open_pipes() == pipes_before
        assert not [t for t in threading.enumerate() if t.name == "nanohermes-shell-reader"]
    finally:
        if not is_gone(pid):
            os.kill(pid, 9)


@pytest.mark.timeout(60)
def test_a_reader_that_cannot_start_stops_the_command(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No thread left (a runaway used up the user's processes): the command already started must not
    run on unseen, and the call fails with one line."""
    tag = "hostile-reader-test"
    monkeypatch.setattr(shell, "new_tag", lambda: tag)

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    try:
        with monkeypatch.context() as patch:
            patch.setattr(threading.Thread, "start", refuse)
            with pytest.raises(ToolError, match=r"could not read the command's output .*it was stopped"):
                ShellTool(workspace).run_shell("sleep 1000", ctx=CallContext())
        assert wait_for(lambda: not reaper.tagged_pids(tag)), "the command kept running"
    finally:
        reaper.kill_tagged(tag)


def test_a_timeout_past_the_range_of_float_is_capped(workspace: Path) -> None:
    out = ShellTool(workspace, timeout=5).run_shell("echo hi", timeout=10**400, ctx=CallContext())
    assert out.startswith("exit code: 0 (timeout capped at the shell_timeout setting, 5 s)")
    for bad in (-(10**400), True, "5"):
        with pytest.raises(ToolError, match="positive, finite number of seconds"):
            ShellTool(workspace).run_shell("echo hi", timeout=bad, ctx=CallContext())  # type: ignore[arg-type]


def test_a_command_too_long_for_the_system_says_what_to_do(workspace: Path) -> None:
    began = time.monotonic()
    with pytest.raises(ToolError, match=r"command too long to run \(2000005 characters\).*script file"):
        ShellTool(workspace).run_shell("echo " + "a" * 2_000_000, ctx=CallContext())
    assert time.monotonic() - began < PROMPTLY


@pytest.mark.timeout(120)
@pytest.mark.skipif(not Path("/proc/self/environ").is_file(), reason="no /proc")
@pytest.mark.skipif(shutil.which("setsid") is None, reason="needs setsid (util-linux)")
def test_cancelling_kills_a_child_that_left_the_group_at_once(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C must not wait for the pipes a `setsid` child holds: the user, seeing nothing happen,
    presses Ctrl-C again, nanohermes aborts, and the child runs on. (A long grace shows the wait.)"""
    monkeypatch.setattr(shell, "PIPE_GRACE", 60.0)
    cancel = CancelToken()
    pidfile = workspace / "setsid.pid"
    canceller, cancelled_at = cancel_when_written(pidfile, cancel)
    command = f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 1000' & sleep 1000"
    try:
        with pytest.raises(Cancelled):
            ShellTool(workspace).run_shell(command, ctx=CallContext(cancel=cancel))
        returned = time.monotonic() - cancelled_at[0]
        assert returned < PROMPTLY, f"returned {returned:.1f} s after the cancellation"
        assert wait_gone(pid_in(pidfile), 5), "the setsid child outlived the cancelled call"
    finally:
        canceller.join(PROMPTLY)
        if pidfile.exists() and pidfile.read_text().strip().isdigit() and not is_gone(pid_in(pidfile)):
            os.kill(pid_in(pidfile), 9)


def test_a_workspace_a_command_removed_is_named_in_the_next_error(workspace: Path) -> None:
    tool = ShellTool(workspace)
    assert tool.run_shell(f"rm -rf '{workspace}'", ctx=CallContext()).startswith("exit code: 0")
    with pytest.raises(ToolError, match=f"could not start the shell: .*: {workspace}$"):
        tool.run_shell("echo hi", ctx=CallContext())


def test_a_timeout_past_the_range_of_float_is_shown_in_an_approval_title() -> None:
    assert shown_seconds(2.5) == "2.5"
    assert shown_seconds(10**400) == "more than 1e308"  # `:g` raised OverflowError
