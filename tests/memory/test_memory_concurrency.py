"""Lost updates, crashes and disk faults (SPEC §3.2): nothing lost, nothing half-written."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from memory_helpers import CHILD_WRITER, LOOP_WRITER

from nanohermes.core.errors import StoreError
from nanohermes.core.fileio import atomic_write
from nanohermes.memory import MemoryStore, memfile
from nanohermes.memory.memfile import MemoryFile


def _spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_eight_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    children = [_spawn(CHILD_WRITER, str(tmp_path), str(n), "30") for n in range(8)]
    try:
        for child in children:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
        for child in children:  # start them together
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        for child in children:
            assert child.wait(timeout=100) == 0
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
            for stream in (child.stdin, child.stdout):
                if stream is not None:
                    stream.close()
    texts = {e.text for e in MemoryStore(tmp_path).load()}
    expected = {f"writer {n} note {i:03d} marker w{n}n{i:03d}end" for n in range(8) for i in range(30)}
    assert texts == expected


def _hammer(stores: list[MemoryStore], threads: int, per_thread: int) -> None:
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        store = stores[n % len(stores)]
        try:
            barrier.wait(timeout=30)
            for i in range(per_thread):
                store.remember(
                    "lesson", f"thread {n:02d} lesson {i:02d} tag t{n:02d}i{i:02d}z", source="test"
                )
        except BaseException as err:  # surfaced below, never swallowed
            errors.append(err)

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=100)
    assert not errors


def test_sixteen_threads_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    shared = MemoryStore(tmp_path)
    stores = [shared] + [MemoryStore(tmp_path) for _ in range(7)]  # shared and separate instances
    _hammer(stores, threads=16, per_thread=10)
    assert len(MemoryStore(tmp_path).load()) == 160


class _SlowFile(MemoryFile):
    """Widens the window between reading and writing so a missing lock shows every time."""

    def write(self, pieces: list[bytes], version: int) -> memfile.Identity:
        time.sleep(0.05)
        return super().write(pieces, version)


class _UnlockedFile(MemoryFile):
    def write(self, pieces: list[bytes], version: int) -> memfile.Identity:
        time.sleep(0.05)  # and no clean-up of leftover temp files: that is only safe under the lock
        atomic_write(self.path, pieces, temp_prefix=memfile.TEMP_PREFIX)
        return memfile.identity(os.stat(self.path))


class _SlowWriter(MemoryStore):
    file_class: type[MemoryFile] = _SlowFile

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self._file = self.file_class(self.dir)


class _Unlocked(_SlowWriter):
    file_class = _UnlockedFile

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._mutex:  # this store's own lock only: no cross-process lock
            self.dir.mkdir(parents=True, exist_ok=True)
            yield


def test_control_without_the_lock_updates_are_lost(tmp_path: Path) -> None:
    """The harness above catches a missing lock: the same race without locks loses writes."""
    _hammer([_Unlocked(tmp_path / "unlocked") for _ in range(4)], threads=4, per_thread=1)
    assert len(MemoryStore(tmp_path / "unlocked").load()) < 4
    _hammer([_SlowWriter(tmp_path / "locked") for _ in range(4)], threads=4, per_thread=1)
    assert len(MemoryStore(tmp_path / "locked").load()) == 4


def test_sigkill_mid_write_never_leaves_a_broken_file(tmp_path: Path) -> None:
    rng = random.Random(7)
    path = tmp_path / "memory.json"
    for round_number in range(40):
        child = _spawn(LOOP_WRITER, str(tmp_path), str(round_number))
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "writing"
            time.sleep(rng.uniform(0.0, 0.03))
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
            for stream in (child.stdin, child.stdout):
                if stream is not None:
                    stream.close()
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["version"] == 1
        assert data["entries"]
        assert not list(tmp_path.glob("memory.json.broken-*"))
    notices: list[str] = []
    store = MemoryStore(tmp_path, on_notice=notices.append)
    started = time.monotonic()
    assert store.remember("fact", "a new writer after forty crashes is not blocked")
    assert time.monotonic() - started < 10
    assert not notices
    assert not list(tmp_path.glob(".memory.json.*.tmp"))  # leftovers of killed writers removed


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_disk_fault_leaves_old_file_byte_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    store = MemoryStore(tmp_path)
    store.remember("fact", "the original memory survives disk faults")
    before = store.path.read_bytes()

    def fail(*args: object) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, failing, fail)
    with pytest.raises(StoreError, match="Input/output error"):
        store.remember("fact", "this write fails half way")
    monkeypatch.undo()
    assert store.path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.json", "memory.json.lock"]
    assert [e.text for e in MemoryStore(tmp_path).load()] == ["the original memory survives disk faults"]
    assert [e.text for e in store.load()] == ["the original memory survives disk faults"]
