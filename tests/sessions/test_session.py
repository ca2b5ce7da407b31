"""Session files (SPEC §4.4): format, atomic private writes, secrets, corrupt files, listing."""

from __future__ import annotations

import json
import os
import stat
from datetime import datetime
from pathlib import Path

import pytest

from nanohermes.core.errors import ConfigError, SessionError
from nanohermes.core.types import Usage
from nanohermes.sessions.paths import (
    latest_session,
    new_session_path,
    recent_session_files,
    resolve_session_path,
    session_title,
)
from nanohermes.sessions.store import SESSION_VERSION, SessionData, SessionFile, read_header

SAMPLES = Path(__file__).resolve().parents[2] / "sessions"
SAMPLE = SAMPLES / "sample-session.json"
SAMPLE_V1 = SAMPLES / "sample-session-v1.json"


def test_sample_session_in_the_repository_loads() -> None:
    session = SessionFile(SAMPLE)
    data = session.load()
    assert data.id == "3f2a9c41b7d0"
    assert data.model == "gpt-4o-mini"
    assert [m["role"] for m in data.messages][:3] == ["system", "user", "user"]
    assert data.messages[3]["tool_calls"][1]["id"] == "call_2"
    assert (data.archived, data.archive) == (4, [])  # the archive stays in its sidecar until asked for
    assert [m["role"] for m in session.load_archive()] == ["user", "assistant", "tool", "assistant"]
    assert data.usage == Usage(18342, 611, 18953)
    assert data.title == "Add a --celsius flag to the weather command."


def test_version_1_sample_loads_and_migrates_on_the_next_save(tmp_path: Path) -> None:
    old = SessionFile(SAMPLE_V1).load()
    assert len(old.archive) == 4
    path = tmp_path / "s.json"
    path.write_bytes(SAMPLE_V1.read_bytes())
    session = SessionFile(path)
    data = session.load()
    data.messages.append({"role": "user", "content": "one more"})
    session.save(data)
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert raw["version"] == SESSION_VERSION == 2
    assert "archive" not in raw
    assert raw["archived"] == 4
    assert raw["title"] == "Add a --celsius flag to the weather command."  # the first user message, archived
    assert SessionFile(path).load_archive() == old.archive
    assert SessionFile(path).load().messages == [*old.messages, {"role": "user", "content": "one more"}]
    assert "\n" not in path.read_text(encoding="utf-8"), "compact JSON"


def test_archive_is_appended_never_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    session = SessionFile(path)
    data = SessionData(messages=[{"role": "system", "content": "S"}])
    for n in range(3):
        data.archive.append({"role": "user", "content": f"old {n}"})
        session.save(data)
    sidecar = path.with_name("a.archive.jsonl")
    first_bytes = sidecar.read_bytes()
    session.save(data)  # nothing new archived: the sidecar is not touched
    assert sidecar.read_bytes() == first_bytes
    assert [m["content"] for m in SessionFile(path).load_archive()] == ["old 0", "old 1", "old 2"]
    assert stat.S_IMODE(sidecar.stat().st_mode) == 0o600


def test_lines_of_a_save_that_crashed_before_its_main_file_are_cut(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    data = SessionData(
        messages=[{"role": "system", "content": "S"}], archive=[{"role": "user", "content": "kept"}]
    )
    SessionFile(path).save(data)
    sidecar = path.with_name("c.archive.jsonl")
    with sidecar.open("a", encoding="utf-8") as handle:  # a later save appended, then crashed
        handle.write('{"role":"user","content":"orphan"}\n{"role":"us')
    assert [m["content"] for m in SessionFile(path).load_archive()] == ["kept"]
    session = SessionFile(path)
    resumed = session.load()
    resumed.archive.append({"role": "user", "content": "next"})
    session.save(resumed)
    assert [m["content"] for m in SessionFile(path).load_archive()] == ["kept", "next"]


def test_a_failed_save_loses_no_archived_message(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "f.json"
    session = SessionFile(path)
    data = SessionData(
        messages=[{"role": "system", "content": "S"}], archive=[{"role": "user", "content": "a"}]
    )
    path.mkdir(parents=True)  # the main file cannot be replaced: the save fails after the archive append
    with pytest.raises(SessionError):
        session.save(data)
    path.rmdir()
    data.archive.append({"role": "user", "content": "b"})
    session.save(data)
    assert [m["content"] for m in SessionFile(path).load_archive()] == ["a", "b"]
    assert SessionFile(path).load().archived == 2


def test_listing_reads_only_the_header(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    data = SessionData(
        messages=[{"role": "system", "content": "S"}, {"role": "user", "content": "héllo  world"}]
    )
    data.messages += [{"role": "assistant", "content": "x" * 200_000}]
    SessionFile(path).save(data)
    header = read_header(path)
    assert header is not None
    assert (header["title"], header["message_count"]) == ("héllo world", 3)
    assert session_title(path) == "héllo world"
    assert session_title(SAMPLE_V1).startswith("[Summary"), "version 1 files are read whole"


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
        ('{"version": 2, "messages": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        # loads, but the encoder, deeper in the stack, failed every request and save after it
        ('{"version": 2, "messages": [{"role": "user", "x": ' + "[" * 950 + "]" * 950 + "}]}", "100 levels"),
        # sent as they were, a strict provider answered 400 to every turn after them
        ('{"version": 2, "messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}', "text"),
        ('{"version": 2, "messages": [{"role": "user", "content": "q", "name": 5}]}', "name is not a string"),
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
    assert resolve_session_path(sessions, "a/b.json") == Path("a/b.json")
    assert resolve_session_path(sessions, "v1.2_x-y") == sessions / "v1.2_x-y.json"
    for bad in ("  ", "a/b", "../escape", "..", ".", "a b", "~/x"):
        with pytest.raises(ConfigError):
            resolve_session_path(sessions, bad)
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(ConfigError, match="directory"):
        resolve_session_path(sessions, str(tmp_path / "dir.json"))
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
    listed = [(path.name, session_title(path)) for path, _ in recent_session_files(sessions)]
    assert listed[1:] == [(first.name, "fix the parser"), ("broken.json", "(unreadable session file)")]
    assert listed[0][0] == "named.json"


def test_a_deeply_nested_file_does_not_break_listing_or_continue(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    hostile = sessions / "deep.json"  # `[[[[…` in the header: the JSON decoder runs out of recursion
    hostile.write_text('{"version": 2, "title": ' + "[" * 8_000 + "]" * 8_000 + ', "messages": []}')
    assert [session_title(path) for path, _ in recent_session_files(sessions)] == [
        "(unreadable session file)"
    ]
    assert latest_session(sessions, tmp_path) is None


def test_text_that_is_not_utf_8_is_saved_and_loads_back(tmp_path: Path) -> None:
    # os.listdir decodes a file name that is not UTF-8 with lone surrogates; a stream can split an emoji
    listing = os.fsdecode(b"bad\xff.txt")
    data = SessionData(messages=[{"role": "system", "content": "S"}, {"role": "user", "content": listing}])
    data.archive.append({"role": "assistant", "content": "\ud83d\ude00 split"})
    path = tmp_path / "u.json"
    SessionFile(path).save(data)
    assert SessionFile(path).load().messages[1]["content"] == listing
    healed = SessionFile(path).load_archive()  # the escaped halves of the pair load as one emoji
    assert healed == [{"role": "assistant", "content": "\U0001f600 split"}]


def test_an_archive_sidecar_that_is_a_symlink_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    elsewhere = tmp_path / "notes.txt"
    elsewhere.write_text("precious\n", encoding="utf-8")
    path = tmp_path / "sessions" / "s.json"
    path.parent.mkdir()
    path.with_name("s.archive.jsonl").symlink_to(elsewhere)
    data = SessionData(
        messages=[{"role": "system", "content": "S"}], archive=[{"role": "user", "content": "a"}]
    )
    with pytest.raises(SessionError, match="cannot write session file"):
        SessionFile(path).save(data)
    assert elsewhere.read_text(encoding="utf-8") == "precious\n"


def test_new_session_names_are_reserved_before_any_file_is_written(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    when = datetime(2026, 1, 2, 3, 4, 5)
    # two nanohermes started in the same second: neither has written its session file yet
    names = {new_session_path(sessions, when).name for _ in range(3)}
    assert names == {"20260102-030405.json", "20260102-030405-2.json", "20260102-030405-3.json"}


def test_a_last_reply_with_unanswered_tool_calls_still_loads(tmp_path: Path) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    messages = [
        {"role": "system", "content": "S"},
        {"role": "assistant", "content": "", "tool_calls": [call, {**call, "id": "c2"}]},
        {"role": "tool", "tool_call_id": "c2", "content": "second"},
        {"role": "tool", "tool_call_id": "c1", "content": "first"},
        {"role": "assistant", "content": "", "tool_calls": [call]},  # the process died here
    ]
    path = tmp_path / "d.json"
    SessionFile(path).save(SessionData(messages=messages))
    assert SessionFile(path).load().messages == messages


def test_a_session_path_too_long_for_the_file_system_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot be used: File name too long"):
        resolve_session_path(tmp_path, str(tmp_path / ("x" * 5_000 + ".json")))


def test_a_nul_in_a_session_path_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="NUL character"):  # not the OS's ValueError
        resolve_session_path(tmp_path, "a\0b.json")


def test_a_count_too_large_to_write_back_is_invalid_and_saves_go_on(tmp_path: Path) -> None:
    # 4,300 nines load (Python's limit), but one more turn's tokens made the next save fail for good
    nines = "9" * 4_300
    path = tmp_path / "n.json"
    usage = f'"usage": {{"prompt_tokens": {nines}}}'
    path.write_text(f'{{"version": 2, "archived": {nines}, {usage}, "messages": []}}')
    session = SessionFile(path)
    data = session.load()
    assert (data.archived, data.usage) == (0, Usage())
    reply = {"prompt_tokens": 10**5_000, "completion_tokens": 5, "total_tokens": 10**5_000}
    data.usage += Usage.from_dict(reply)  # a reply's hostile count is no count
    data.usage += Usage.from_dict({"prompt_tokens": 10**15, "completion_tokens": 1})
    data.archive.append({"role": "user", "content": "old"})
    session.save(data)
    saved = SessionFile(path).load()
    assert saved.usage == Usage(10**15, 6, 10**15 + 6)
    assert f"{saved.usage.total_tokens:,}"  # the totals can be shown
    assert saved.archived == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
@pytest.mark.timeout(20)
def test_a_fifo_or_a_device_in_place_of_a_session_file_is_refused_unread(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.json")  # opening it to read waits for a writer: forever
    (tmp_path / "zero.json").symlink_to("/dev/zero")  # endless
    for name in ("fifo.json", "zero.json"):
        with pytest.raises(SessionError, match="cannot be read .not a regular file"):
            SessionFile(tmp_path / name).load()
    path = tmp_path / "s.json"
    path.write_text('{"version": 2, "archived": 1, "archive_bytes": 10000000, "messages": []}')
    os.mkfifo(tmp_path / "s.archive.jsonl")
    with pytest.raises(SessionError, match="unreadable archive"):
        SessionFile(path).load_archive()
    (tmp_path / "s.archive.jsonl").unlink()
    (tmp_path / "s.archive.jsonl").write_text('{"role": "user", "content": "old"}\n')
    # archive_bytes far past the sidecar's end: its lines, not a buffer of that size
    path.write_text('{"version": 2, "archived": 1, "archive_bytes": 1000000000000000, "messages": []}')
    assert SessionFile(path).load_archive() == [{"role": "user", "content": "old"}]
