"""One writer per session: the lock, its holder's pid, and release on close or process death."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nanohermes.errors import SessionError, SessionInUse
from nanohermes.session_lock import SessionLock, lock_path


def test_a_held_session_cannot_be_locked_again_and_names_the_holder(tmp_path: Path) -> None:
    session = tmp_path / "sessions" / "work.json"
    with SessionLock.acquire(session) as held:
        assert held.held
        with pytest.raises(SessionInUse, match=rf"in use by another nanohermes \(pid {os.getpid()}\)"):
            SessionLock.acquire(session)
    assert not held.held
    SessionLock.acquire(session).release()  # free again
    assert (os.stat(lock_path(session)).st_mode & 0o777) == 0o600


@pytest.mark.timeout(60)
def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    session = tmp_path / "work.json"
    code = (
        "import sys, time; from pathlib import Path; from nanohermes.session_lock import SessionLock\n"
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
