"""Stopping what waits on the client or on the process: a cancel reaches a turn blocked on an
editor that never answers, and SIGTERM / SIGHUP end the server as the end of its input does (turns
cancelled and answered, sessions saved) — the real process, raw bytes."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import NoReturn

import pytest
from cli_process import sessions_dir
from fake_server import FakeServer
from fake_server import fake_server as fake_server
from raw_client import clean_exit, raw_server


def first_text(message: dict[str, object]) -> bool:
    params = message.get("params")
    return (
        message.get("method") == "session/update"
        and isinstance(params, dict)
        and "content" in params["update"]
    )


def test_cancel_ends_a_turn_whose_edit_preview_waits_on_an_unanswered_editor_read(
    fake_server: FakeServer, workspace: Path
) -> None:
    # in ask mode the diff shown for approval reads the file through the editor first
    (workspace / "main.py").write_text("print(1)\n")
    fake_server.push_tool_calls([("edit_file", {"path": "main.py", "old": "print(1)", "new": "print(2)"})])
    fake_server.push_text("Edited.")
    with raw_server(fake_server, workspace) as server:
        server.initialize(fs=True)
        sid = server.new_session(workspace)
        server.prompt("p", sid, "edit main.py")
        server.server_request("fs/read_text_file")  # never answered
        server.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
        reply = server.reply("p")
        server.prompt("q", sid, "and now?")
        again = server.reply("q")
        clean_exit(server)
    assert reply.get("result") == {"stopReason": "cancelled"}, reply
    assert again.get("result") == {"stopReason": "end_turn"}, again
    assert (workspace / "main.py").read_text() == "print(1)\n"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_mid_turn_answers_cancelled_saves_and_exits_0(
    fake_server: FakeServer, workspace: Path, signum: signal.Signals
) -> None:
    fake_server.push_text("slow " * 400, delay=0.02)
    with raw_server(fake_server, workspace) as server:
        server.initialize()
        sid = server.new_session(workspace)
        server.prompt("p", sid, "talk slowly")
        server.wait_for(first_text)
        server.process.send_signal(signum)
        reply = server.reply("p")
        assert server.process.wait(30) == 0, server.stderr()
        assert "Traceback" not in server.stderr()
    assert reply.get("result") == {"stopReason": "cancelled"}, reply
    saved = json.loads((sessions_dir() / f"{sid}.json").read_text())
    assert [m["role"] for m in saved["messages"]] == ["system", "user", "assistant"]
    assert saved["messages"][1]["content"] == "talk slowly"
    assert f"{signum.name}: saving every session, then exiting" in server.stderr()


def test_bad_cursors_and_huge_ids_are_short_invalid_params_errors(
    fake_server: FakeServer, workspace: Path
) -> None:
    with raw_server(fake_server, workspace) as server:
        server.initialize()
        server.request("digits", "session/list", {"cursor": "9" * 5000})
        server.request("arabic", "session/list", {"cursor": "\u0661\u0662"})
        server.request(
            "long", "session/prompt", {"sessionId": "x" * 20_000, "prompt": [{"type": "text", "text": "hi"}]}
        )
        server.request(
            "load", "session/load", {"sessionId": "y" * 10_000, "cwd": str(workspace), "mcpServers": []}
        )
        errors = [server.reply(name)["error"] for name in ("digits", "arabic", "long", "load")]
        clean_exit(server)
    assert [e["code"] for e in errors] == [-32602] * 4, errors
    assert all(len(json.dumps(e)) < 400 for e in errors), errors
    assert "Unhandled error" not in server.stderr()


def test_resuming_an_open_session_in_another_cwd_before_its_first_turn_keeps_it(
    fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    with raw_server(fake_server, workspace) as server:
        server.initialize()
        sid = server.new_session(workspace)  # no turn yet: no session file
        server.request("r", "session/resume", {"sessionId": sid, "cwd": str(other), "mcpServers": []})
        resumed = server.reply("r")
        server.prompt("p", sid, "hello")
        answered = server.reply("p")
        clean_exit(server)
    assert "result" in resumed, resumed
    assert answered.get("result") == {"stopReason": "end_turn"}, answered
    assert json.loads((sessions_dir() / f"{sid}.json").read_text())["workspace"] == str(other.resolve())


def test_session_ids_tried_and_never_opened_leave_nothing_behind(tmp_path: Path) -> None:
    # a client trying id after id (300k of them took 90 MB) must not grow the server
    from acp import RequestError

    from nanohermes.acp.server import NanohermesAcpAgent
    from nanohermes.config.settings import load_settings

    settings = load_settings({"model": "fake-model", "sessions_dir": str(tmp_path)})

    def factory(*args: object) -> NoReturn:
        raise AssertionError("no session file: nothing is opened")

    agent = NanohermesAcpAgent(settings, factory, lambda workspace: None)

    async def tries() -> None:
        for number in range(50):
            with pytest.raises(RequestError, match="no saved session"):
                await agent.load_session(cwd=str(tmp_path), session_id=f"id-{number}")

    asyncio.run(tries())
    assert agent._id_locks == {}
