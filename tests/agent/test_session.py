"""Session files (SPEC §4.4): format, atomic private writes, secrets, corrupt files, listing."""

from __future__ import annotations

import json
import os
import stat
from datetime import datetime
from pathlib import Path

import pytest

from nanohermes.errors import SessionError
from nanohermes.session import (
    SESSION_VERSION,
    SessionData,
    SessionFile,
    latest_session,
    list_sessions,
    new_session_path,
    resolve_session_path,
)
from nanohermes.types import Usage

SAMPLE = Path(__file__).resolve().parents[2] / "sessions" / "sample-session.json"


def test_sample_session_in_the_repository_loads() -> None:
    data = SessionFile(SAMPLE).load()
    assert data.id == "3f2a9c41b7d0"
    assert data.model == "gpt-4o-mini"
    assert [m["role"] for m in data.messages][:3] == ["system", "user", "user"]
    assert data.messages[3]["tool_calls"][1]["id"] == "call_2"
    assert len(data.archive) == 4
    assert data.usage == Usage(18342, 611, 18953)


def test_round_trip_is_private_atomic_and_redacts_the_key(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "s.json"
    secret = "sk-test-THE-SECRET-KEY-123"
    data = SessionData(model="m", workspace="/w")
    data.messages = [{"role": "system", "content": "S"}, {"role": "user", "content": f"my key is {secret}"}]
    SessionFile(path).save(data, secrets=(secret,))
    text = path.read_text(encoding="utf-8")
    assert secret not in text
    assert "[redacted]" in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["s.json"]  # no temp file left behind
    loaded = SessionFile(path).load()
    assert json.loads(text)["version"] == SESSION_VERSION
    assert loaded.messages[1]["content"] == "my key is [redacted]"
    assert loaded.created == data.created


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "does not hold a JSON object"),
        ('{"messages": []}', "has no version"),
        ('{"version": 1, "messages": [{"role": "robot"}]}', "invalid entry messages[0]"),
        ('{"version": 1}', "has no 'messages' list"),
    ],
)
def test_corrupt_file_is_a_clear_error_and_left_untouched(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SessionError) as caught:
        SessionFile(path).load()
    line = caught.value.one_line()
    assert str(path) in line
    assert problem in line
    assert "--session" in line
    assert path.read_text(encoding="utf-8") == content


def test_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.json"
    path.write_text('{"version": 99, "messages": []}', encoding="utf-8")
    with pytest.raises(SessionError, match="newer"):
        SessionFile(path).load()


def test_paths_names_timestamps_and_listing(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    assert resolve_session_path(sessions, "work") == sessions / "work.json"
    assert resolve_session_path(sessions, "x.json") == Path("x.json")
    assert resolve_session_path(sessions, "a/b") == Path("a/b")
    with pytest.raises(SessionError):
        resolve_session_path(sessions, "  ")
    when = datetime(2026, 1, 2, 3, 4, 5)
    first = new_session_path(sessions, when)
    assert first.name == "20260102-030405.json"
    assert latest_session(sessions) is None
    older = SessionData()
    older.messages = [{"role": "system", "content": ""}, {"role": "user", "content": "fix the   parser"}]
    SessionFile(first).save(older)
    assert new_session_path(sessions, when).name == "20260102-030405-2.json"
    newer = sessions / "named.json"
    SessionFile(newer).save(SessionData())
    os.utime(first, (1_000_000, 1_000_000))
    (sessions / "broken.json").write_text("{", encoding="utf-8")
    os.utime(sessions / "broken.json", (0, 0))
    assert latest_session(sessions) == newer
    infos = list_sessions(sessions)
    assert [i.path.name for i in infos] == ["named.json", first.name, "broken.json"]
    assert infos[1].title == "fix the parser"
    assert infos[2].title == "(unreadable session file)"
