"""A kill (SIGTERM) or a closed terminal (SIGHUP) while a shell command runs: the command runs in a
session of its own, which neither reaches, so nanohermes cancels the turn first and the command is
killed with it instead of being left running; the session is saved."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from cli_process import sessions_dir, started_nanohermes
from fake_server import FakeServer
from fake_server import fake_server as fake_server

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def no_sandbox() -> dict[str, str]:
    """The test's environment (its own HOME and dirs), with the sandbox off: bubblewrap would kill
    every process of a command by itself."""
    return {**os.environ, "NANOHERMES_SANDBOX": "off"}


def running(marker: str) -> list[int]:
    """Pids of processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def wait_for(check: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def long_command(server: FakeServer, command: str = "sleep 600") -> str:
    """Queue a turn running `command`, tagged with a marker to find it by; the marker."""
    marker = f"nh-exit-signal-{uuid.uuid4().hex[:12]}"
    server.push_tool_calls([("run_shell", {"command": f"{command} # {marker}"})])
    server.push_text("Done.")
    return marker


@contextlib.contextmanager
def none_left(marker: str) -> Iterator[None]:
    """Whatever the test saw, no process holding `marker` outlives it."""
    try:
        yield
    finally:
        for pid in running(marker):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.timeout(60)
def test_sigterm_during_a_p_turn_kills_its_command_and_saves_the_session(
    fake_server: FakeServer, workspace: Path
) -> None:
    marker = long_command(fake_server)
    args = ("--yes", "--session", "s", "-p", "run it")
    with (
        none_left(marker),
        started_nanohermes(fake_server, workspace, *args, key="sk-test", env=no_sandbox()) as process,
    ):
        assert wait_for(lambda: running(marker), 20), "the command never started"
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)
        assert wait_for(lambda: not running(marker), 5), "the command was left running"
        assert (sessions_dir() / "s.json").is_file()


@pytest.mark.timeout(90)
def test_a_terminal_closed_during_a_repl_turn_kills_its_command(
    fake_server: FakeServer, workspace: Path
) -> None:
    marker = long_command(fake_server)
    env = {
        **no_sandbox(),
        "NANOHERMES_MODEL": "fake-model",
        "NANOHERMES_BASE_URL": fake_server.url,
        "NANOHERMES_API_KEY": "sk-test",
        "TERM": "xterm-256color",
        "PROMPT_TOOLKIT_NO_CPR": "1",
    }
    script = str(Path(sys.executable).with_name("nanohermes"))
    child = pexpect.spawn(script, ["--yes", "--session", "r"], env=env, cwd=str(workspace), encoding="utf-8",
                          dimensions=(40, 100), timeout=30)  # fmt: skip
    with none_left(marker), child:  # closed (killed) on leaving, whatever happened
        child.expect_exact("❯")
        child.send("run it\r")
        assert wait_for(lambda: running(marker), 20), "the command never started"
        os.kill(child.pid, signal.SIGHUP)  # what the terminal sends when its window closes
        child.expect(pexpect.EOF, timeout=30)
        assert wait_for(lambda: not running(marker), 5), "the command was left running"
        assert (sessions_dir() / "r.json").is_file()


@pytest.mark.parametrize("gap", [0.05, 0.3, 0.6])
@pytest.mark.timeout(60)
def test_ctrl_c_twice_in_p_never_leaves_the_command_running(
    fake_server: FakeServer, workspace: Path, gap: float
) -> None:
    """A command that ignores SIGTERM is killed half a second after it; a second Ctrl-C in that half
    second (as the run was ending) printed a KeyboardInterrupt traceback and left it running."""
    marker = long_command(fake_server, "trap '' TERM; sleep 600")
    args = ("--yes", "-p", "run it")
    with (
        none_left(marker),
        started_nanohermes(fake_server, workspace, *args, key="sk-test", env=no_sandbox()) as process,
    ):
        assert wait_for(lambda: running(marker), 20), "the command never started"
        process.send_signal(signal.SIGINT)
        time.sleep(gap)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=20)
        assert "Traceback" not in stderr
        assert wait_for(lambda: not running(marker), 5), "the command was left running"
        assert process.returncode == 130, stderr
