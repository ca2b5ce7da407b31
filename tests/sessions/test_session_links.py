"""A symlinked session file (e.g. kept in a dotfiles repository): read and written through to its
target, the link stays; a symlink loop or a link to a FIFO is refused in one line and left alone."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from cli_process import run_nanohermes
from fake_server import FakeServer
from fake_server import fake_server as fake_server

from nanohermes.core.errors import SessionError, SessionInUse
from nanohermes.sessions.lock import SessionLock, lock_path
from nanohermes.sessions.store import SessionData, SessionFile


def conversation(*texts: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "s"}, *({"role": "user", "content": t} for t in texts)]


@pytest.fixture
def dotfiles(tmp_path: Path) -> Path:
    path = tmp_path / "dotfiles"
    path.mkdir()
    return path


def test_a_symlinked_session_is_saved_through_to_its_target_and_the_link_stays(
    tmp_path: Path, dotfiles: Path
) -> None:
    target = dotfiles / "work.json"
    SessionFile(target).save(SessionData(messages=conversation("first")))
    link = tmp_path / "work.json"
    link.symlink_to(target)
    session = SessionFile(link)
    assert session.exists()
    data = session.load()
    data.messages.append({"role": "user", "content": "second"})
    data.archive.append({"role": "user", "content": "archived"})
    session.save(data)
    assert link.is_symlink()
    assert os.readlink(link) == str(target)
    assert [m["content"] for m in SessionFile(target).load().messages] == ["s", "first", "second"]
    assert SessionFile(target).load_archive() == [{"role": "user", "content": "archived"}]
    assert sorted(os.listdir(tmp_path)) == ["dotfiles", "work.json"]  # sidecar beside the target


def test_a_dangling_session_link_gets_its_target_created(tmp_path: Path, dotfiles: Path) -> None:
    link = tmp_path / "new.json"
    link.symlink_to(dotfiles / "new.json")
    session = SessionFile(link)
    assert not session.exists()  # a new session
    session.save(SessionData(messages=conversation("hello")))
    assert link.is_symlink()
    assert [m["content"] for m in SessionFile(dotfiles / "new.json").load().messages] == ["s", "hello"]


def test_a_session_link_loop_is_refused_in_one_line_and_nothing_is_lost(tmp_path: Path) -> None:
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    session = SessionFile(loop)
    with pytest.raises(SessionError, match="is a symlink loop, not a session file; it was left untouched"):
        session.exists()
    data = SessionData(messages=conversation("hello"), archive=[{"role": "user", "content": "old"}])
    with pytest.raises(SessionError, match="symlink loop") as caught:
        session.save(data)
    assert "\n" not in caught.value.one_line()
    assert loop.is_symlink()
    assert os.readlink(loop) == str(loop)
    loop.unlink()  # the user fixes it: the next save writes everything, the archived line too
    session.save(data)
    assert session.load_archive() == [{"role": "user", "content": "old"}]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_link_to_a_fifo_is_refused_and_left_alone(tmp_path: Path, dotfiles: Path) -> None:
    fifo = dotfiles / "pipe.json"
    os.mkfifo(fifo)
    link = tmp_path / "pipe.json"
    link.symlink_to(fifo)
    session = SessionFile(link)
    with pytest.raises(SessionError, match="is a FIFO, socket or device, not a session file"):
        session.exists()
    with pytest.raises(SessionError, match="FIFO"):
        session.save(SessionData(messages=conversation("hello")))
    assert link.is_symlink()
    assert not fifo.is_file()
    assert fifo.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX locks")
def test_a_session_and_a_link_to_it_share_one_lock(tmp_path: Path, dotfiles: Path) -> None:
    target = dotfiles / "work.json"
    link = tmp_path / "work.json"
    link.symlink_to(target)
    assert lock_path(link) == lock_path(target) == dotfiles / "work.json.lock"
    with SessionLock.acquire(link), pytest.raises(SessionInUse):
        SessionLock.acquire(target)


@pytest.mark.timeout(60)
def test_resuming_a_session_link_loop_exits_with_one_line_and_keeps_the_link(
    fake_server: FakeServer, workspace: Path
) -> None:
    loop = workspace / "loop.json"
    loop.symlink_to(loop)
    done = run_nanohermes(fake_server, workspace, "--session", str(loop), "-p", "hi")
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert "is a symlink loop" in done.stderr
    assert loop.is_symlink()
    assert not fake_server.bodies, "refused before any request"


@pytest.mark.timeout(60)
def test_a_session_kept_in_dotfiles_is_updated_by_a_turn(
    fake_server: FakeServer, workspace: Path, dotfiles: Path
) -> None:
    link = workspace / "work.json"
    link.symlink_to(dotfiles / "work.json")  # dangling until the first turn
    fake_server.push_text("Hello!")
    done = run_nanohermes(fake_server, workspace, "--session", str(link), "-p", "hi")
    assert done.returncode == 0, done.stderr
    assert link.is_symlink()
    assert SessionFile(dotfiles / "work.json").load().messages[-1]["content"] == "Hello!"
