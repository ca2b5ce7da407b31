"""One writer per session (SPEC §4.4): an OS lock on `<session file>.lock`, dropped by the OS when the
holder dies. A release removes the file while still holding it, so a new holder checks that the file
it locked is still the one at the path (else it tries again): two processes never both hold a session."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from pathlib import Path

from nanohermes.core.errors import SessionError, SessionInUse, reason
from nanohermes.core.fileio import ensure_private_dir, write_target

LOCK_SUFFIX = ".lock"
OPEN_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
"""Never through a symlink: taking the lock truncates the file to write the pid into it."""
LOCK_TRIES = 100  # lock files removed under a new holder's hands in a row before it gives up

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # byte 0; the pid is written after it
        except OSError:
            return False
        return True

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def lock_path(session_path: Path) -> Path:
    """Beside a symlinked session's target: every link to one file shares one lock."""
    target = write_target(session_path)
    return target.with_name(target.name + LOCK_SUFFIX)


class SessionLock:
    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, session_path: Path) -> SessionLock:
        """SessionInUse when another process holds it, SessionError when the lock file cannot be made."""
        path = lock_path(session_path)
        for _ in range(LOCK_TRIES):
            fd = _open_lock_file(path, session_path)
            if not _try_lock(fd):
                holder = _read_pid(fd)
                os.close(fd)
                who = f"pid {holder}" if holder else "a process whose pid is unknown"
                raise SessionInUse(
                    f"session {session_path} is in use by another nanohermes ({who})",
                    "wait for it to finish, or use another --session",
                )
            if _still_at(fd, path):
                break
            os.close(fd)  # its holder removed it as it let go: lock the one at the path now
        else:
            raise SessionError(f"cannot lock session file {session_path}: its lock file keeps being replaced")
        with contextlib.suppress(OSError):  # the pid only helps the message: a full disk is fine here
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, f" {os.getpid()}\n".encode())  # byte 0 is the one Windows locks
        return cls(path, fd)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if os.name == "posix":  # removed while held: a process that opened it meanwhile tries again
            with contextlib.suppress(OSError):
                if _still_at(fd, self.path):
                    os.unlink(self.path)
        os.close(fd)  # closing the descriptor drops the OS lock

    def __enter__(self) -> SessionLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _open_lock_file(path: Path, session_path: Path) -> int:
    try:
        ensure_private_dir(path.parent)
        return os.open(path, OPEN_FLAGS, 0o600)
    except OSError as err:
        denied = err.errno in (errno.EACCES, errno.EPERM)
        raise SessionError(
            f"cannot lock session file {session_path}: {reason(err)}",
            f"its lock file is created in {path.parent}: check that folder's permissions" if denied else "",
        ) from None


def _still_at(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path, follow_symlinks=False))
    except OSError:
        return False


def _read_pid(fd: int) -> int | None:
    try:
        os.lseek(fd, 1, os.SEEK_SET)
        text = os.read(fd, 64).decode("ascii", errors="replace")
        return int(text.split()[0])
    except (OSError, ValueError, IndexError):
        return None
