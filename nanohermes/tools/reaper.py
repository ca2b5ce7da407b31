"""Find and kill every process a shell command started, also those that left its process group
(`setsid`): each command runs with a unique tag in its environment, inherited by every descendant;
`kill_tagged` finds them through `/proc/<pid>/environ`, stops them all (SIGSTOP: none can fork a
replacement), then kills them. What escapes: `env -i …`, and everything without `/proc`."""

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
