"""The shared crash-safe writer behind memory.json and session files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nanohermes.core import fileio
from nanohermes.core.fileio import atomic_write, ensure_private_dir


def test_atomic_write_replaces_the_file_privately(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    target.write_text("old")
    assert atomic_write(target, b"new") is None
    assert target.read_bytes() == b"new"
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


def test_a_failed_rename_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()  # os.replace of a file over a directory fails
    (target / "inside").write_text("kept")
    with pytest.raises(IsADirectoryError):
        atomic_write(target, b"new", temp_prefix=".t.")
    assert (target / "inside").read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_ensure_private_dir_creates_missing_parents_0700_and_leaves_existing_ones(tmp_path: Path) -> None:
    existing = tmp_path / "home"
    existing.mkdir(mode=0o755)
    os.chmod(existing, 0o755)
    ensure_private_dir(existing / "a" / "b")
    assert (existing / "a").stat().st_mode & 0o777 == 0o700
    assert (existing / "a" / "b").stat().st_mode & 0o777 == 0o700
    assert existing.stat().st_mode & 0o777 == 0o755


def test_atomic_write_fsyncs_the_file_and_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(fileio.os, "fsync", calls.append)
    target = tmp_path / "cache"
    target.write_bytes(b"old")
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert len(calls) == 2  # the file, then its directory
    assert [p.name for p in tmp_path.iterdir()] == ["cache"]


@pytest.mark.parametrize("kind", ["loop", "dangling"])
def test_a_directory_that_is_a_broken_link_is_not_a_directory_error(tmp_path: Path, kind: str) -> None:
    """A sessions folder that is a link loop (or leads nowhere) hung start-up: mkdir's «exists»
    read as «this session name is taken», and the next name was tried forever."""
    from nanohermes.sessions.paths import new_session_path

    folder = tmp_path / "sessions"
    if kind == "loop":
        (tmp_path / "other").symlink_to(folder)
        folder.symlink_to(tmp_path / "other")
    else:
        folder.symlink_to(tmp_path / "gone" / "sessions")
    with pytest.raises(NotADirectoryError, match="not a directory"):
        ensure_private_dir(folder)
    with pytest.raises(NotADirectoryError):
        ensure_private_dir(folder / "sub")
    assert new_session_path(folder).parent == folder  # returns: locking it names the cause
