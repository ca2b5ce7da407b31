"""The locks around every read-modify-write of memory.json (SPEC §3.2, FIX lost updates).

Two layers:
- an in-process re-entrant lock, shared by every MemoryStore of the same file, so two threads (two
  parallel `memory_save` calls, a tool call and background distillation) take turns;
- a cross-process lock, an OS lock on `memory.json.lock`, so two sessions or two processes take
  turns. The OS drops it when its holder dies, so a killed writer leaves no stale lock. On POSIX it
  is a plain `flock` on the lock file (what `filelock` takes there too, so both kinds of holders
  exclude each other), taken in a few microseconds; where `flock` is missing (Windows, a file system
  without it) `filelock` takes it.

The registry below is the one deliberate process-wide mutable structure of the memory package: the
in-process lock must be shared by stores that do not know about each other (the agent's store, the
tool runner's, a sub-agent's, the CLI's), and the only thing they share is the file's path. Entries
are tiny and bounded by the number of distinct memory directories a process opens.
"""

from __future__ import annotations

import errno
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from nanohermes.core.errors import StoreError

LOCK_TIMEOUT_S = 30.0
POLL_S = 0.05
"""How often a waiting writer tries the OS lock again."""

_BUSY = frozenset({errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK})
_NO_FLOCK = frozenset({errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOLCK, errno.EINVAL})
_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)

_HAS_FLOCK = sys.platform != "win32"

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only

    def _try_lock(fd: int) -> bool:
        raise OSError(errno.ENOSYS, "no flock")

    def _unlock(fd: int) -> None:
        raise OSError(errno.ENOSYS, "no flock")

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        """Take the exclusive OS lock of `fd` without waiting: True when taken, False when another
        holder has it. OSError when the file system cannot lock."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            if err.errno in _BUSY:
                return False
            raise
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


class PathLock:
    """The in-process and cross-process locks of one memory.json."""

    def __init__(self, lock_file: Path) -> None:
        self.lock_file = lock_file
        self.thread_lock = threading.RLock()
        self._path = os.fspath(lock_file)
        self._depth = 0  # holds of the owning thread (guarded by thread_lock)
        self._fd = -1  # the locked lock file while held (flock)
        self._file_lock: FileLock | None = None  # where flock is missing
        if not _HAS_FLOCK:  # pragma: no cover - Windows
            self._file_lock = self._fallback()

    def _fallback(self) -> FileLock:
        return FileLock(self._path, timeout=LOCK_TIMEOUT_S, mode=0o600, thread_local=False)

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Both locks, in-process first. Re-entrant within one thread."""
        with self.thread_lock:
            if self._depth == 0:
                self._acquire()
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release()

    def _acquire(self) -> None:
        try:
            if self._file_lock is None:
                self._fd = self._os_lock()
                if self._fd >= 0:
                    return
                self._file_lock = self._fallback()  # this file system cannot flock
            self._file_lock.acquire()
        except Timeout:
            raise self._timed_out() from None
        except OSError as err:
            raise StoreError(f"cannot lock {self.lock_file}: {err.strerror or err}") from None

    def _os_lock(self) -> int:
        """The lock file, open and flocked; -1 when its file system has no flock. Waits at most
        LOCK_TIMEOUT_S for another holder."""
        fd = os.open(self._path, _OPEN_FLAGS, 0o600)
        try:
            deadline = time.monotonic() + LOCK_TIMEOUT_S
            while not _try_lock(fd):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._timed_out()
                time.sleep(min(POLL_S, left))
        except OSError as err:
            os.close(fd)
            if err.errno in _NO_FLOCK:
                return -1
            raise
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _release(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            try:
                _unlock(fd)  # (closing would drop it too, unless a forked child shares the descriptor)
            finally:
                os.close(fd)
        elif self._file_lock is not None:
            self._file_lock.release()

    def _timed_out(self) -> StoreError:
        return StoreError(
            f"memory is locked by another process for more than {LOCK_TIMEOUT_S:.0f} s ({self.lock_file})",
            "close other nanohermes sessions and try again",
        )


_registry: dict[Path, PathLock] = {}
_registry_guard = threading.Lock()


def lock_for(memory_file: Path) -> PathLock:
    """The PathLock shared by every store of `memory_file` in this process."""
    key = Path(os.path.realpath(memory_file))  # never raises, even for a symlink loop
    with _registry_guard:
        found = _registry.get(key)
        if found is None:
            found = PathLock(key.with_name(key.name + ".lock"))
            _registry[key] = found
        return found
