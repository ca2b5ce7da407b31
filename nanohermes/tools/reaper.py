"""Find and kill every process a shell command started, also those that left its process group.

Killing the process group misses a child that called `setsid` (or double-forked into a new session):
it keeps running after the timeout and can keep writing to the workspace. So each command runs with a
unique tag in its environment (`NANOHERMES_SHELL_CALL=<id>`), which every descendant inherits; on
timeout, Ctrl-C or output left open, `kill_tagged` finds the processes carrying it (Linux:
`/proc/<pid>/environ`), stops them all (SIGSTOP, so none can fork a replacement meanwhile) and kills
them. What escapes: a process that rebuilt its environment (`env -i …`), and everything on systems
without `/proc`. The bubblewrap sandbox's PID namespace contains everything.
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from pathlib import Path

TAG_VAR = "NANOHERMES_SHELL_CALL"
PROC = Path("/proc")
MAX_ROUNDS = 20  # rescans while a fork loop makes new ones; each round stops what it finds


def new_tag() -> str:
    return uuid.uuid4().hex


def can_track() -> bool:
    """Whether tagged processes can be found here."""
    return (PROC / str(os.getpid()) / "environ").is_file()


def tagged_pids(tag: str) -> set[int]:
    """Processes (other than this one) whose environment holds the tag."""
    needle = f"{TAG_VAR}={tag}".encode()
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for name in os.listdir(PROC):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                environ = (PROC / name / "environ").read_bytes()
            except OSError:  # gone meanwhile, or another user's
                continue
            if needle in environ.split(b"\0"):
                found.add(int(name))
    return found


def kill_tagged(tag: str) -> None:
    """Stop, then kill, every process carrying `tag`. Never raises."""
    stopped: set[int] = set()
    for _ in range(MAX_ROUNDS):
        fresh = tagged_pids(tag) - stopped
        if not fresh:
            break
        for pid in fresh:
            _signal(pid, signal.SIGSTOP)
        stopped |= fresh
    for pid in stopped:
        _signal(pid, signal.SIGKILL)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)
