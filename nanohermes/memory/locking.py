"""The locks around every read-modify-write of memory.json (SPEC §3.2, FIX lost updates).

Two layers:
- an in-process re-entrant lock, shared by every MemoryStore of the same file, so two threads (two
  parallel `memory_save` calls, a tool call and background distillation) take turns;
- a cross-process lock (`filelock`, an OS lock on `memory.json.lock`), so two sessions or two
  processes take turns. The OS drops it when its holder dies, so a killed writer leaves no stale lock.

The registry below is the one deliberate process-wide mutable structure of the memory package: the
in-process lock must be shared by stores that do not know about each other (the agent's store, the
tool runner's, a sub-agent's, the CLI's), and the only thing they share is the file's path. Entries
are tiny and bounded by the number of distinct memory directories a process opens.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from nanohermes.errors import StoreError

LOCK_TIMEOUT_S = 30.0


class PathLock:
    """The in-process and cross-process locks of one memory.json."""

    def __init__(self, lock_file: Path) -> None:
        self.lock_file = lock_file
        self.thread_lock = threading.RLock()
        self._file_lock = FileLock(str(lock_file), timeout=LOCK_TIMEOUT_S, mode=0o600, thread_local=False)

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Both locks, in-process first. Re-entrant within one thread."""
        with self.thread_lock:
            try:
                self._file_lock.acquire()
            except Timeout:
                raise StoreError(
                    f"memory is locked by another process for more than {LOCK_TIMEOUT_S:.0f} s "
                    f"({self.lock_file})",
                    "close other nanohermes sessions and try again",
                ) from None
            except OSError as err:
                raise StoreError(f"cannot lock {self.lock_file}: {err.strerror or err}") from None
            try:
                yield
            finally:
                self._file_lock.release()


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
