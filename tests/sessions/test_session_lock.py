"""One writer per session: the lock, its holder's pid, and release on close or process death."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nanohermes.core.errors import SessionError, SessionInUse
from nanohermes.sessions import lock as session_lock
from nanohermes.sessions.lock import SessionLock, lock_path


def test_a_held_session_cannot_be_locked_again_and_names_the_holder(tmp_path: Path) -> None:
    session = tmp_path / "sessions" / "work.json"
    with SessionLock.acquire(session) as held:
        assert held.path.exists()
        assert (os.stat(lock_path(session)).st_mode & 0o777) == 0o600
        with pytest.raises(SessionInUse, match=rf"in use by another nanohermes \(pid {os.getpid()}\)"):
            SessionLock.acquire(session)
    assert not held.path.exists()  # released: the lock file goes with it
    SessionLock.acquire(session).release()  # free again


@pytest.mark.timeout(60)
def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    session = tmp_path / "work.json"
    code = (
        "import sys, time; from pathlib import Path; from nanohermes.sessions.lock import SessionLock\n"
        f"lock = SessionLock.acquire(Path({str(session)!r})); print('held', flush=True); time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(SessionInUse, match=f"pid {holder.pid}"):
            SessionLock.acquire(session)
    finally:
        holder.kill()
        holder.communicate(timeout=30)
    SessionLock.acquire(session).release()


def test_a_lock_file_that_is_a_symlink_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    elsewhere = tmp_path / "notes.txt"
    elsewhere.write_text("precious\n", encoding="utf-8")
    session = tmp_path / "work.json"  # e.g. --session pointing into a checkout that planted the link
    lock_path(session).symlink_to(elsewhere)
    with pytest.raises(SessionError, match="cannot lock session file"):
        SessionLock.acquire(session)
    assert elsewhere.read_text(encoding="utf-8") == "precious\n"


@pytest.mark.skipif(sys.platform == "win32", reason="an open file cannot be removed there")
def test_a_clean_release_removes_the_lock_file_and_only_it(tmp_path: Path) -> None:
    session = tmp_path / "work.json"
    session.write_text("{}", encoding="utf-8")
    SessionLock.acquire(session).release()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work.json"]


@pytest.mark.skipif(sys.platform == "win32", reason="an open file cannot be removed there")
def test_a_lock_file_removed_as_another_process_opened_it_never_lets_two_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = tmp_path / "work.json"
    first = SessionLock.acquire(session)
    late = os.open(lock_path(session), os.O_RDWR)  # a second process opened it just before the release
    first.release()  # the file it opened is gone from the path
    third = SessionLock.acquire(session)  # a third process: a new lock file
    opened = iter([late])
    real_open = session_lock._open_lock_file
    monkeypatch.setattr(session_lock, "_open_lock_file", lambda p, s: next(opened, None) or real_open(p, s))
    with third, pytest.raises(SessionInUse):  # the second locks its removed file, sees it, tries again
        SessionLock.acquire(session)  # (it closed `late` before trying again)
