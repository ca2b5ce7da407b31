"""ACP corners: session/close racing session/load, invalid-params replies that would echo a huge
value back, and the advice a corrupt session file gets in an editor (the real process, raw bytes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_process import sessions_dir
from fake_server import FakeServer
from fake_server import fake_server as fake_server
from raw_client import RawServer, raw_server


def load(server: RawServer, request_id: int, session_id: str, cwd: Path) -> None:
    server.request(request_id, "session/load", {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []})


@pytest.mark.timeout(120)
def test_close_sent_while_loads_of_the_session_are_in_flight_closes_it(
    fake_server: FakeServer, workspace: Path
) -> None:
    with raw_server(fake_server, workspace) as server:
        server.initialize()
        session_id = server.new_session(workspace)
        server.prompt(1, session_id, "hello")
        assert server.reply(1)["result"] == {"stopReason": "end_turn"}
        server.request(2, "session/close", {"sessionId": session_id})
        assert server.reply(2)["result"] == {}
        load(server, 3, session_id, workspace)
        load(server, 4, session_id, workspace)
        server.request(5, "session/close", {"sessionId": session_id})  # before either load answers
        assert "result" in server.reply(3)
        assert "result" in server.reply(4)
        assert server.reply(5) == {"jsonrpc": "2.0", "id": 5, "result": {}}
        server.prompt(6, session_id, "still open?")
        assert "unknown session" in server.reply(6)["error"]["message"]  # closed, as asked
        assert server.finish() == 0, server.stderr()


@pytest.mark.timeout(120)
def test_an_invalid_params_reply_never_echoes_a_huge_value_back(
    fake_server: FakeServer, workspace: Path
) -> None:
    with raw_server(fake_server, workspace) as server:
        server.initialize()
        session_id = server.new_session(workspace)
        server.request(1, "session/prompt", {"sessionId": session_id, "prompt": "A" * 10_000_000})
        server.request(2, "session/prompt", {"sessionId": session_id, "prompt": [[1] * 1000] * 5000})
        wrong_text = [{"type": "text", "text": 5}]
        server.request(3, "session/prompt", {"sessionId": session_id, "prompt": wrong_text})
        wrong_type, many, small = (server.reply(n, timeout=60) for n in (1, 2, 3))
        assert server.finish() == 0, server.stderr()
    for reply in (wrong_type, many):
        assert reply["error"]["code"] == -32602
        assert len(json.dumps(reply)) < 8192
    first = wrong_type["error"]["data"]["errors"][0]
    assert first["loc"] == ["prompt"]
    assert first["input"].startswith("AAAA")
    assert many["error"]["data"]["errors"][-1] == "… and 4990 more"
    assert small["error"]["data"]["errors"][0]["input"] == 5  # a small value is quoted as it is


@pytest.mark.timeout(120)
def test_a_corrupt_session_file_gets_advice_an_editor_user_can_follow(
    fake_server: FakeServer, workspace: Path
) -> None:
    folder = sessions_dir()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "broken-1.json").write_text("{broken", encoding="utf-8")
    with raw_server(fake_server, workspace) as server:
        server.initialize()
        load(server, 1, "broken-1", workspace)
        message = server.reply(1)["error"]["message"]
        assert server.finish() == 0, server.stderr()
    assert "is not valid JSON" in message
    assert "left untouched" in message
    assert "--session" not in message
    assert "start a new session" in message
    assert (folder / "broken-1.json").read_text(encoding="utf-8") == "{broken"


@pytest.mark.timeout(120)
def test_a_request_with_a_huge_array_is_refused_before_it_is_validated(
    fake_server: FakeServer, workspace: Path
) -> None:
    """A million wrong prompt blocks had pydantic build a million errors (1.2 GB) before any reply."""
    with raw_server(fake_server, workspace) as server:
        server.initialize()
        session_id = server.new_session(workspace)
        server.request(1, "session/prompt", {"sessionId": session_id, "prompt": [1] * 1_000_000})
        refused = server.reply(1, timeout=60)
        server.request(
            2, "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
        )
        assert server.reply(2, timeout=60)["result"] == {"stopReason": "end_turn"}
        assert server.finish() == 0, server.stderr()
    assert refused["error"] == {
        "code": -32602,
        "message": "Invalid params",
        "data": {"details": "an array of over 10,000 items"},
    }
