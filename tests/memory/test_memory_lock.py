"""The cross-process lock of memory.json (memfile.py): excludes filelock holders in other processes
(older nanohermes versions too) both ways, re-entrant, bounded by its timeout, one clear error."""

from __future__ import annotations

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
from nanohermes.memory import MemoryStore, memfile
from nanohermes.memory.memfile import MemoryFile

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
    monkeypatch.setattr(memfile, "LOCK_TIMEOUT_S", 0.3)
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
    ours = MemoryFile(tmp_path)
    other = FileLock(str(tmp_path / "memory.json.lock"), timeout=0.2)
    ours.acquire()
    with pytest.raises(Timeout):
        other.acquire()
    ours.lock.release()
    other.acquire()  # free again once we let go
    other.release()


def test_the_lock_is_reentrant_and_released_by_the_outer_hold(tmp_path: Path) -> None:
    ours = MemoryFile(tmp_path)
    other = FileLock(str(tmp_path / "memory.json.lock"), timeout=0.1)
    ours.acquire()
    ours.acquire()
    ours.lock.release()
    with pytest.raises(Timeout):  # the inner release did not drop the OS lock
        other.acquire()
    ours.lock.release()
    with other:
        pass
    mode = stat.S_IMODE(os.stat(tmp_path / "memory.json.lock").st_mode)
    assert mode & 0o077 == 0


def test_a_lock_file_that_cannot_be_opened_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "memory.json.lock").symlink_to(tmp_path / "elsewhere.lock")
    store = MemoryStore(tmp_path)
    with pytest.raises(StoreError, match="cannot lock"):
        store.remember("fact", "no lock, no write")
    assert not (tmp_path / "memory.json").exists()
