"""Writes that do not fit on the disk (or cannot be made at all): the old file intact, no temp file
left, one line naming the cause. The checkpoints' cases are in tests/checkpoints."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from nanohermes.core.errors import SessionError
from nanohermes.core.fileio import StagedWrite
from nanohermes.mcp.logs import ServerLogs
from nanohermes.sessions.store import SessionData, SessionFile


def full_disk(*_: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_staged_write_that_does_not_fit_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "journal.json"
    target.write_bytes(b"old")
    monkeypatch.setattr("nanohermes.core.fileio.write_all", full_disk)
    with pytest.raises(OSError, match="No space left on device") as failed:
        StagedWrite(target, b"new")
    assert failed.value.errno == errno.ENOSPC
    assert os.listdir(tmp_path) == ["journal.json"]
    assert target.read_bytes() == b"old"


def test_a_staged_write_is_in_place_only_once_committed(tmp_path: Path) -> None:
    target = tmp_path / "journal.json"
    target.write_bytes(b"old")
    staged = StagedWrite(target, b"new")
    assert target.read_bytes() == b"old"
    staged.commit()
    staged.discard()  # after a commit: nothing to remove
    assert target.read_bytes() == b"new"
    assert target.stat().st_mode & 0o777 == 0o600
    dropped = StagedWrite(target, b"newer")
    dropped.discard()
    assert target.read_bytes() == b"new"
    assert os.listdir(tmp_path) == ["journal.json"]


def test_a_session_save_on_a_full_disk_says_intact_only_when_there_was_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.json"
    session = SessionFile(path)
    data = SessionData(messages=[{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}])
    with monkeypatch.context() as patch:
        patch.setattr("nanohermes.core.fileio.write_all", full_disk)
        with pytest.raises(SessionError) as first:
            session.save(data)
    cause = f"cannot write session file {path}: No space left on device"
    assert first.value.one_line() == f"{cause} (free some disk space)"  # a new session: nothing was there
    assert os.listdir(tmp_path) == []

    session.save(data)
    saved = path.read_bytes()
    data.messages.append({"role": "assistant", "content": "hello"})
    with monkeypatch.context() as patch:
        patch.setattr("nanohermes.core.fileio.write_all", full_disk)
        with pytest.raises(SessionError) as later:
            session.save(data)
    intact = "free some disk space; the previous version of the file is intact"
    assert later.value.one_line() == f"{cause} ({intact})"
    assert path.read_bytes() == saved
    assert os.listdir(tmp_path) == ["s.json"]


@pytest.mark.parametrize("where", ["full-disk", "cannot-create"])
def test_an_mcp_log_that_cannot_be_written_stops_neither_the_server_nor_the_exit(
    tmp_path: Path, where: str
) -> None:
    if where == "full-disk":
        if not Path("/dev/full").exists():
            pytest.skip("needs /dev/full (Linux), a device every write to fails with ENOSPC")
        log_dir = tmp_path / "mcp"
        log_dir.mkdir()
        (log_dir / "s.log").symlink_to("/dev/full")
        reason = "No space left on device"
    else:
        log_dir = tmp_path / "mcp"
        log_dir.write_text("a file where the log directory goes")
        reason = "File exists"
    logs = ServerLogs(log_dir)
    stderr = logs.open("s")  # what the server gets as its stderr
    stderr.write("a line of the server\n")
    assert logs.hint("s") == f" (its stderr could not be logged in {log_dir / 's.log'}: {reason})"
    assert logs.tail("s") == ""
    logs.close()  # nanohermes' exit: no error
