"""run_shell: exit code and streams, timeouts that kill the whole group, output capped while read."""

from __future__ import annotations

import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import Cancelled, ToolError
from nanohermes.tools.base import CallContext
from nanohermes.tools.shell import CappedBuffer, ShellTool

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell and process groups")


def is_gone(pid: int) -> bool:
    """True when `pid` no longer runs (a zombie waiting for a non-reaping init counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


SLEEP = 1000
"""What the commands sleep: a process still there after SETTLE seconds was not going to end on its own."""
SETTLE = 30.0
"""How long a condition may take to come true on a loaded machine (a bound, not a delay: waits end as
soon as it holds)."""
PROMPTLY = SLEEP / 50
"""A call that should end early ends well within this (20 s): far from the sleep's own end, so the
check holds however loaded the machine is and still fails if the command ran its course."""


def wait_for(condition: Callable[[], object], seconds: float = SETTLE) -> bool:
    """Poll `condition` until it is true or `seconds` have passed; whether it became true."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def wait_gone(pid: int, seconds: float = SETTLE) -> bool:
    return wait_for(lambda: is_gone(pid), seconds)


def pid_in(pidfile: Path) -> int:
    """The pid a command wrote to `pidfile` (it must have got that far)."""
    assert wait_for(lambda: pidfile.exists() and pidfile.read_text().strip().isdigit(), 0), (
        f"the command never wrote {pidfile.name}"
    )
    return int(pidfile.read_text())


def test_exit_code_and_both_streams(workspace: Path) -> None:
    out = ShellTool(workspace).run_shell("echo out; echo err >&2; pwd; exit 3", ctx=CallContext())
    assert out.splitlines()[0] == "exit code: 3"
    assert f"stdout:\nout\n{workspace.resolve()}" in out
    assert "stderr:\nerr" in out
    quiet = ShellTool(workspace).run_shell("true", ctx=CallContext())
    assert quiet == "exit code: 0\nstdout: (empty)\nstderr: (empty)"


def test_timeout_kills_the_shell_and_its_grandchild(workspace: Path) -> None:
    shell = ShellTool(workspace, timeout=120)
    pidfile = workspace / "grandchild.pid"
    began = time.monotonic()
    out = shell.run_shell(f"sleep {SLEEP} & echo $! > {pidfile}; sleep {SLEEP}", timeout=2, ctx=CallContext())
    elapsed = time.monotonic() - began
    assert out.startswith("timed out after 2 s: the command and its process group were killed")
    assert elapsed < 2 + PROMPTLY, f"took {elapsed:.1f} s"  # the timeout ended it, not the sleeps
    assert wait_gone(pid_in(pidfile)), "the backgrounded sleep survived"


def test_group_members_ignoring_sigterm_are_killed_too(workspace: Path) -> None:
    pidfile = workspace / "stubborn.pid"  # written once TERM is ignored
    command = f"sh -c 'trap \"\" TERM; echo $$ > {pidfile}; sleep {SLEEP}' & sleep {SLEEP}"
    out = ShellTool(workspace).run_shell(command, timeout=2, ctx=CallContext())
    assert out.startswith("timed out after 2 s")
    assert wait_gone(pid_in(pidfile)), "the member ignoring SIGTERM survived"


def omitted_around(section: str) -> tuple[str, int, str]:
    """(head, bytes omitted, tail) of a stream section cut around its note."""
    match = re.search(r"\n\[… (\d+) bytes omitted …\]\n", section)
    assert match is not None, section[:200]
    return section[: match.start()], int(match.group(1)), section[match.end() :]


def test_ten_megabytes_of_output_arrive_within_the_cap(workspace: Path) -> None:
    shell = ShellTool(workspace, max_chars=20_000)
    script = "import sys; [sys.stdout.write(f'{i:09d}\\n') for i in range(1_000_000)]"
    out = shell.run_shell(f'{sys.executable} -c "{script}"', ctx=CallContext())
    assert out.startswith("exit code: 0\nstdout:\n000000000\n000000001")  # head kept
    assert out.endswith("000999999\nstderr: (empty)")  # tail kept
    assert 19_500 < len(out) <= 20_000  # the whole report fits the cap: the runner never cuts it again
    head, omitted, tail = omitted_around(out.split("stdout:\n", 1)[1].split("\nstderr:", 1)[0])
    assert len(head) + omitted + len(tail) + 1 == 10_000_000  # + the final newline, stripped


def test_capped_buffer_never_grows_past_twice_its_limit() -> None:
    buffer = CappedBuffer(1000)
    for _ in range(10_000):
        buffer.write(b"z" * 1024)
        assert len(buffer.head) + len(buffer.tail) <= 2 * 1000
    assert buffer.total == 10_000 * 1024
    assert buffer.text().count("z") == 1000


def test_capped_buffer_cuts_to_a_smaller_limit_and_counts_what_it_left_out() -> None:
    whole = CappedBuffer(1000)
    whole.write(b"0123456789")
    assert whole.text() == "0123456789"
    assert whole.text(6) == "012\n[… 4 bytes omitted …]\n789"
    assert whole.text(0) == "\n[… 10 bytes omitted …]\n"
    dropped = CappedBuffer(10)
    dropped.write(b"abcde" + b"x" * 100 + b"vwxyz")
    assert dropped.shown == 10
    assert dropped.text() == "abcde\n[… 100 bytes omitted …]\nvwxyz"
    assert dropped.text(4) == "ab\n[… 106 bytes omitted …]\nyz"


def test_both_streams_share_the_cap_and_keep_their_notes(workspace: Path) -> None:
    script = (
        "import sys; sys.stdout.write('OUT-HEAD' + 'o' * 100_000 + 'OUT-TAIL'); "
        "sys.stderr.write('ERR-HEAD' + 'e' * 100_000 + 'ERR-TAIL')"
    )
    shell = ShellTool(workspace, max_chars=2_000)
    out = shell.run_shell(f'{sys.executable} -c "{script}"', ctx=CallContext())
    assert len(out) <= 2_000
    stdout, stderr = out.removeprefix("exit code: 0\nstdout:\n").split("\nstderr:\n")
    for section, name in ((stdout, "OUT"), (stderr, "ERR")):
        head, omitted, tail = omitted_around(section)
        assert head.startswith(f"{name}-HEAD")
        assert tail.endswith(f"{name}-TAIL")
        assert len(head) + omitted + len(tail) == 100_016
    small = shell.run_shell("echo short >&2; yes | head -c 50000", ctx=CallContext())
    assert small.endswith("stderr:\nshort")  # the small stream whole, the big one takes the rest
    assert 1_900 < len(small) <= 2_000


def test_timeout_override_is_bounded(workspace: Path) -> None:
    shell = ShellTool(workspace, timeout=5)
    assert shell._timeout(None) == (5, "")
    assert shell._timeout(2.5) == (2.5, "")
    limit, note = shell._timeout(30)
    assert limit == 5
    assert "capped at the shell_timeout setting" in note
    for bad in (0, -1, float("nan"), float("inf"), float("-inf")):
        with pytest.raises(ToolError, match="positive, finite"):
            shell._timeout(bad)
    with pytest.raises(ToolError, match="empty"):
        shell.run_shell("   ", ctx=CallContext())


def cancel_when_written(pidfile: Path, cancel: CancelToken) -> tuple[threading.Thread, list[float]]:
    """Cancel once `pidfile` holds a pid (not after a fixed delay: the shell may start slowly); the
    thread doing it, and the list that gets the time it did."""
    cancelled_at: list[float] = []

    def cancel_once_started() -> None:
        wait_for(lambda: pidfile.exists() and pidfile.read_text().strip())
        cancelled_at.append(time.monotonic())
        cancel.cancel()

    canceller = threading.Thread(target=cancel_once_started, daemon=True)
    canceller.start()
    return canceller, cancelled_at


def test_cancellation_kills_the_group_at_once(workspace: Path) -> None:
    cancel = CancelToken()
    pidfile = workspace / "child.pid"
    canceller, cancelled_at = cancel_when_written(pidfile, cancel)
    with pytest.raises(Cancelled):
        ShellTool(workspace).run_shell(
            f"sleep {SLEEP} & echo $! > {pidfile}; sleep {SLEEP}", ctx=CallContext(cancel=cancel)
        )
    returned = time.monotonic() - cancelled_at[0]
    canceller.join(SETTLE)
    assert returned < PROMPTLY, f"returned {returned:.1f} s after the cancellation"
    assert wait_gone(pid_in(pidfile)), "the backgrounded sleep survived"


def test_background_process_holding_the_pipes_is_stopped(workspace: Path) -> None:
    pidfile = workspace / "bg.pid"
    out = ShellTool(workspace).run_shell(
        f"sleep {SLEEP} & echo $! > {pidfile}; echo started", ctx=CallContext()
    )
    assert out.startswith("exit code: 0")
    assert "background processes kept the output open" in out
    assert "started" in out
    assert wait_gone(pid_in(pidfile))


@pytest.mark.timeout(60)
@pytest.mark.skipif(shutil.which("setsid") is None, reason="needs setsid (util-linux)")
def test_a_process_that_escaped_the_group_and_the_tag_cannot_hold_the_call(workspace: Path) -> None:
    """`env -i setsid` leaves the process group and drops the call's tag: it cannot be found to be
    stopped. Holding the output, it must not keep the call waiting for as long as it runs."""
    pidfile = workspace / "escaped.pid"
    command = f"env -i setsid sh -c 'echo $$ > {pidfile}; exec sleep {SLEEP}' & echo started"
    began = time.monotonic()
    out = ShellTool(workspace).run_shell(command, ctx=CallContext())
    elapsed = time.monotonic() - began
    assert wait_for(lambda: pidfile.exists() and pidfile.read_text().strip().isdigit())
    pid = pid_in(pidfile)
    try:
        assert elapsed < PROMPTLY, f"took {elapsed:.1f} s"  # not the escaped sleep's whole run
        assert out.startswith("exit code: 0")
        assert "started" in out
        assert "could not be stopped and may still run" in out
        assert not is_gone(pid)  # what the note says: it escaped
    finally:
        os.kill(pid, 9)
    assert wait_gone(pid)


def test_background_process_with_redirected_output_keeps_running(workspace: Path) -> None:
    pidfile = workspace / "server.pid"
    out = ShellTool(workspace).run_shell(
        f"sleep 30 > /dev/null 2>&1 & echo $! > {pidfile}; echo launched", ctx=CallContext()
    )
    pid = int(pidfile.read_text())
    try:
        assert "background processes" not in out
        assert "launched" in out
        assert not is_gone(pid)
    finally:
        os.kill(pid, 9)


def _growth(path: Path, seconds: float) -> int:
    before = path.stat().st_size if path.exists() else 0
    time.sleep(seconds)
    return (path.stat().st_size if path.exists() else 0) - before


needs_proc = pytest.mark.skipif(not Path("/proc/self/environ").is_file(), reason="no /proc")


@needs_proc
@pytest.mark.timeout(60)
@pytest.mark.parametrize("detach", ["setsid", "double-fork"])
def test_a_child_that_left_the_process_group_does_not_outlive_the_timeout(
    workspace: Path, detach: str
) -> None:
    loop = "while true; do echo x >> out.txt; sleep 0.05; done"
    start = {
        "setsid": f"setsid sh -c '{loop}' >/dev/null 2>&1 &",
        "double-fork": f"(setsid sh -c '{loop}' >/dev/null 2>&1 &) ",
    }[detach]
    shell = ShellTool(workspace, timeout=1)
    try:
        out = shell.run_shell(f"{start}\nsleep 30", ctx=CallContext())
        assert out.startswith("timed out after 1 s")
        assert (workspace / "out.txt").exists()  # it did run
        assert _growth(workspace / "out.txt", 1.0) == 0
    finally:
        for pid in _writers_in(workspace):  # never leave a runaway behind, even when the test fails
            os.kill(pid, 9)


@needs_proc
@pytest.mark.timeout(60)
def test_a_setsid_child_holding_the_output_is_stopped_when_the_command_ends(workspace: Path) -> None:
    shell = ShellTool(workspace, timeout=20)
    try:
        loop = "trap '' PIPE; while true; do echo y; echo x >> out.txt; sleep 0.05; done"
        out = shell.run_shell(f'setsid sh -c "{loop}" &', ctx=CallContext())
        assert "background processes kept the output open and were stopped" in out
        assert _growth(workspace / "out.txt", 1.0) == 0
        assert _writers_in(workspace) == set()
    finally:
        for pid in _writers_in(workspace):
            os.kill(pid, 9)


def _writers_in(workspace: Path) -> set[int]:
    """Live processes whose working directory is the workspace (the test's own runaways)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            here = Path(os.readlink(entry / "cwd")) == workspace.resolve()
            zombie = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except (OSError, IndexError):
            continue
        if here and not zombie:
            found.add(int(entry.name))
    return found


@pytest.mark.parametrize("command", ["echo a\x00b", "echo \ud800"], ids=["nul", "lone-surrogate"])
def test_a_command_no_argv_can_hold_is_a_clear_error(workspace: Path, command: str) -> None:
    with pytest.raises(ToolError, match="command cannot be run"):
        ShellTool(workspace).run_shell(command, ctx=CallContext())
