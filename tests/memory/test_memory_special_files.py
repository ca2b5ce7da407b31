"""memory.json as a symlink loop, a FIFO or a symlink (issue #19 item 12): a clear line, never a hang,
never an internal error; a symlinked memory.json is written through to its target."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from memory_helpers import raw_entry, write_raw

from nanohermes.core.errors import StoreError
from nanohermes.memory import Kind, MemoryStore

posix_only = pytest.mark.skipif(os.name != "posix", reason="symlinks and FIFOs need POSIX")


def _memory(*args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "nanohermes"
    command = [str(script) if script.exists() else "nanohermes", "memory", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=dict(os.environ))


@pytest.fixture
def memory_dir(isolated_home: Path) -> Path:
    directory = isolated_home / ".nanohermes"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@posix_only
def test_symlink_loop_is_one_clear_line(memory_dir: Path) -> None:
    (memory_dir / "memory.json").symlink_to("memory.json")
    for args in (["list"], ["search", "deploy"], ["stats"]):
        done = _memory(*args)
        assert done.returncode == 1, done
        assert "symlink loop" in done.stderr
        assert "internal error" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        assert "Traceback" not in done.stderr
    assert (memory_dir / "memory.json").is_symlink()  # left alone
    with pytest.raises(StoreError, match="symlink loop"):
        MemoryStore(memory_dir).remember(Kind.FACT, "the loop is not overwritten", source="user")
    assert os.readlink(memory_dir / "memory.json") == "memory.json"


@posix_only
def test_fifo_never_hangs_and_is_left_alone(memory_dir: Path) -> None:
    os.mkfifo(memory_dir / "memory.json")
    for args in (["list"], ["search", "deploy"]):
        done = _memory(*args, timeout=15)  # a hang fails here instead of blocking CI
        assert done.returncode == 1, done
        assert "a FIFO" in done.stderr
        assert "internal error" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    with pytest.raises(StoreError, match="a FIFO"):
        MemoryStore(memory_dir).remember(Kind.FACT, "nothing is written into a pipe", source="user")
    assert (memory_dir / "memory.json").is_fifo()
    assert not list(memory_dir.glob("memory.json.broken-*"))


@posix_only
def test_symlinked_memory_file_is_written_through_to_its_target(memory_dir: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    target = write_raw(dotfiles, [raw_entry("preference", "answer in English", 5, "aaaa1111")])
    link = memory_dir / "memory.json"
    link.symlink_to(target)
    store = MemoryStore(memory_dir)
    assert store.remember(Kind.FACT, "the deploy script is scripts/ship.sh", source="user")
    assert link.is_symlink()
    assert link.resolve() == target.resolve()
    texts = [item["text"] for item in json.loads(target.read_text(encoding="utf-8"))["entries"]]
    assert texts == ["answer in English", "the deploy script is scripts/ship.sh"]
    assert [e.text for e in MemoryStore(memory_dir).load()] == texts
    done = _memory("list")
    assert done.returncode == 0
    assert "scripts/ship.sh" in done.stdout


@posix_only
def test_dangling_symlink_creates_its_target(memory_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "mem.json"
    target.parent.mkdir()
    (memory_dir / "memory.json").symlink_to(target)
    store = MemoryStore(memory_dir)
    assert store.load() == []
    assert store.remember(Kind.LESSON, "run pytest with -x first", source="user")
    assert (memory_dir / "memory.json").is_symlink()
    assert target.is_file()
