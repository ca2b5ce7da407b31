"""Search of earlier sessions: BM25 over exchanges of this workspace, archives included."""

from __future__ import annotations

from pathlib import Path

from nanohermes.core.types import IMAGES_SHOWN, Message
from nanohermes.sessions.search import format_hits, search_sessions
from nanohermes.sessions.store import SessionData, SessionFile


def exchange(question: str, answer: str) -> list[Message]:
    return [
        {"role": "user", "content": question},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "function": {"name": "grep"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "src/cache.py:1: import redis"},
        {"role": "assistant", "content": answer},
    ]


def save(path: Path, workspace: Path, messages: list[Message], archive: list[Message] | None = None) -> None:
    data = SessionData(workspace=str(workspace), messages=[{"role": "system", "content": "s"}, *messages])
    data.archive = archive or []
    SessionFile(path).save(data)


def test_the_best_exchanges_of_this_workspace_come_first(tmp_path: Path) -> None:
    sessions, here, elsewhere = tmp_path / "sessions", tmp_path / "here", tmp_path / "elsewhere"
    save(
        sessions / "monday.json",
        here,
        exchange("which database for the cache?", "We decided on Postgres for the cache, not Redis."),
        archive=exchange("how do the caches expire?", "Each cached page expires after an hour."),
    )
    save(sessions / "tuesday.json", here, exchange("rename the CLI flags", "Renamed --celsius to --metric."))
    save(sessions / "other.json", elsewhere, exchange("postgres cache here too?", "Another project."))
    hits, notes = search_sessions(sessions, here, "what did we decide about the cache database")
    assert notes == []
    assert [(hit.session, hit.question) for hit in hits] == [
        ("monday", "which database for the cache?"),
        ("monday", "how do the caches expire?"),  # from the archive; stems: caches = cache
    ]
    assert hits[0].answer == "We decided on Postgres for the cache, not Redis."
    assert hits[0].score > hits[1].score > 0
    assert len(hits[0].date) == len("2026-01-01 12:00")
    text = format_hits(hits, notes, "cache")
    assert text.splitlines()[:3] == [
        f"monday · {hits[0].date}",
        "  you: which database for the cache?",
        "  answer: We decided on Postgres for the cache, not Redis.",
    ]


def test_a_corrupt_session_file_is_skipped_with_a_note(tmp_path: Path) -> None:
    sessions, here = tmp_path / "sessions", tmp_path / "here"
    save(sessions / "good.json", here, exchange("fix the flaky login test", "Fixed the login race."))
    (sessions / "broken.json").write_text('{"version": 2, "messages": [')
    (sessions / "bad-entry.json").write_text(f'{{"version": 2, "workspace": "{here}", "messages": [7]}}')
    hits, notes = search_sessions(sessions, here, "login test")
    assert [hit.session for hit in hits] == ["good"]
    assert len(notes) == 2
    assert all(note.startswith("skipped: session file ") and "\n" not in note for note in notes)
    assert any("broken.json" in note for note in notes)
    assert any("bad-entry.json" in note for note in notes)


def test_no_match_no_sessions_and_image_messages(tmp_path: Path) -> None:
    sessions, here = tmp_path / "sessions", tmp_path / "here"
    assert search_sessions(sessions, here, "anything") == ([], [])
    messages: list[Message] = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "what is in @shot.png"}, {"type": "image_url"}],
        },
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "function": {"name": "view_image"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "shot.png: the image follows"},
        {"role": "user", "content": [{"type": "text", "text": IMAGES_SHOWN}, {"type": "image_url"}]},
        {"role": "assistant", "content": "A red login button."},
    ]
    save(sessions / "pics.json", here, messages)
    hits, _ = search_sessions(sessions, here, "shot")
    assert [(hit.question, hit.answer) for hit in hits] == [("what is in @shot.png", "A red login button.")]
    assert format_hits([], [], "zebra") == "no earlier conversation of this workspace matches 'zebra'"
