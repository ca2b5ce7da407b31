"""The cross-process lock on one workspace's checkpoints (two nanohermes in one workspace).

A lock that cannot be taken (a read-only or full state directory, a holder that never lets go) is a
CheckpointError naming the cause, like every other checkpoint failure, never a bare OSError.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nanohermes.checkpoints.journal import CheckpointError

if TYPE_CHECKING:
    from filelock import BaseFileLock


class CheckpointLock:
    """`with lock:` holds `<directory>/lock`; re-entrant within a thread, as filelock's locks are."""

    def __init__(self, directory: Path, timeout: float) -> None:
        self.directory = directory
        self.timeout = timeout
        self._lock: BaseFileLock | None = None

    def __enter__(self) -> CheckpointLock:
        from filelock import FileLock, Timeout

        path = self.directory / "lock"
        try:
            if self._lock is None:
                self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
                self._lock = FileLock(str(path), timeout=self.timeout)
            self._lock.acquire()
        except Timeout:  # before OSError: filelock's Timeout is a TimeoutError
            raise CheckpointError(
                f"the checkpoints of this workspace are locked by another nanohermes ({path})",
                "wait for it to finish and try again",
            ) from None
        except OSError as err:
            raise CheckpointError(f"cannot lock checkpoints {path}: {err.strerror or err}") from None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._lock is not None:
            self._lock.release()
