"""The cross-process lock of memory.json (locking.py): a plain flock that excludes filelock holders
(older nanohermes versions) both ways, re-entrant, bounded by its timeout, with a fallback."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from filelock import FileLock, Timeout

from nanohermes.core.errors import StoreError
from nanohermes.memory import MemoryStore, locking
from nanohermes.memory.locking import PathLock

_FILELOCK_HOLDER = """
import sys
from filelock import FileLock
lock = FileLock(sys.argv[1], timeout=10)
with lock:
    print("held", flush=True)
    sys.stdin.readline()
"""


@contextmanager
def _held_by_filelock(lock_file: Path) -> Iterator[None]:
    """`lock_file` held by another process through filelock, as nanohermes did before."""
    child = subprocess.Popen(
        [sys.executable, "-c", _FILELOCK_HOLDER, str(lock_file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None
    assert child.stdout is not None
    try:
        assert child.stdout.readline().strip() == "held"
        yield
    finally:
        child.stdin.close()
        child.wait(timeout=30)
        child.stdout.close()


def test_a_filelock_holder_in_another_process_keeps_writers_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(locking, "LOCK_TIMEOUT_S", 0.3)
    store = MemoryStore(tmp_path)
    store.remember("fact", "written before the other process took the lock")
    before = store.path.read_bytes()
    with (
        _held_by_filelock(tmp_path / "memory.json.lock"),
        pytest.raises(StoreError, match="locked by another process"),
    ):
        store.remember("fact", "this write waits for the lock and gives up")
    assert store.path.read_bytes() == before
    assert store.remember("fact", "once the other process let go, the write goes through")


def test_our_lock_keeps_a_filelock_holder_out(tmp_path: Path) -> None:
    lock = PathLock(tmp_path / "memory.json.lock")
    other = FileLock(str(tmp_path / "memory.json.lock"), timeout=0.2)
    with lock.hold(), pytest.raises(Timeout):
        other.acquire()
    other.acquire()  # free again once we let go
    other.release()


def test_the_lock_is_reentrant_and_released_by_the_outer_hold(tmp_path: Path) -> None:
    lock = PathLock(tmp_path / "memory.json.lock")
    other = FileLock(str(tmp_path / "memory.json.lock"), timeout=0.1)
    with lock.hold():
        with lock.hold():
            pass
        with pytest.raises(Timeout):  # the inner release did not drop the OS lock
            other.acquire()
    with other:
        pass
    mode = stat.S_IMODE(os.stat(tmp_path / "memory.json.lock").st_mode)
    assert mode & 0o077 == 0


def test_a_file_system_without_flock_falls_back_to_filelock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_flock(fd: int) -> bool:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(locking, "_try_lock", no_flock)
    store = MemoryStore(tmp_path / "nfs")
    assert store.remember("fact", "written under the fallback lock")
    assert store.remember("fact", "and a second write under it too")
    assert [e.text for e in MemoryStore(tmp_path / "nfs").load()] == [
        "written under the fallback lock",
        "and a second write under it too",
    ]


def test_a_lock_file_that_cannot_be_opened_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "memory.json.lock").symlink_to(tmp_path / "elsewhere.lock")
    store = MemoryStore(tmp_path)
    with pytest.raises(StoreError, match="cannot lock"):
        store.remember("fact", "no lock, no write")
    assert not (tmp_path / "memory.json").exists()
