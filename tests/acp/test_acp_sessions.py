"""End to end, the real `nanohermes acp` process: a client's MCP servers per session (started, offered
as mcp__server__tool, closed with the session and at EOF), session locks shared with the terminal,
session/close and session/resume."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, schema, text_block
from acp_harness import RecordingClient, capabilities, running_server, stderr_text, streaming_prompt
from fake_server import FakeServer
from fake_server import fake_server as fake_server
from mcp_helpers import DEMO, process_gone, wait_for

from nanohermes.sessions.lock import SessionLock

DISTILL = "durable long-term memories"


def run(body: Callable[[], Awaitable[Any]], timeout: float = 90.0) -> Any:
    return asyncio.run(asyncio.wait_for(body(), timeout))


def demo(name: str, markers: Path) -> schema.McpServerStdio:
    """The MCP tests' demo server (tests/mcp/demo_server.py) as an ACP client sends it."""
    markers.mkdir(exist_ok=True)
    return schema.McpServerStdio(
        name=name, command=sys.executable, args=[str(DEMO), "--marker-dir", str(markers)], env=[]
    )


def chat_bodies(server: FakeServer) -> list[dict[str, Any]]:
    return [b for b in server.bodies if DISTILL not in json.dumps(b)]


def server_pid(markers: Path) -> int:
    assert wait_for(lambda: (markers / "server.pid").exists(), 30), "the MCP server did not start"
    return int((markers / "server.pid").read_text())


def test_client_mcp_servers_are_offered_per_session_and_closed_with_it(
    fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    fake_server.push_tool_calls([("mcp__demo__echo", {"text": "ping"})], match="use the demo")
    fake_server.push_text("The demo said ping.", match="echo: ping")
    client = RecordingClient()
    first_markers, second_markers = tmp_path / "m1", tmp_path / "m2"
    sse = schema.SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[])

    async def body() -> tuple[Any, str, Any, list[int], list[bool], Any]:
        async with running_server(fake_server.url, client) as (conn, process):
            init = await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            blank = schema.McpServerStdio(name="blank", command=" ", args=[], env=[])
            with pytest.raises(RequestError) as bad:
                await conn.new_session(cwd=str(workspace), mcp_servers=[blank])
            assert bad.value.code == -32602
            assert "MCP server 'blank'" in str(bad.value)
            sid = (
                await conn.new_session(cwd=str(workspace), mcp_servers=[demo("demo", first_markers), sse])
            ).session_id
            reply = await conn.prompt(session_id=sid, prompt=[text_block("use the demo")])
            other = await conn.new_session(cwd=str(workspace), mcp_servers=[demo("demo", second_markers)])
            pids = [server_pid(first_markers), server_pid(second_markers)]
            await conn.close_session(session_id=sid)
            closed = [
                await asyncio.to_thread(wait_for, lambda: process_gone(pids[0]), 15),
                not process_gone(pids[1]),  # the other session's server still runs
            ]
            with pytest.raises(RequestError) as gone:
                await conn.prompt(session_id=sid, prompt=[text_block("still there?")])
        assert process.returncode == 0, stderr_text(process)
        return init, sid, reply, pids, closed, (other.session_id, gone.value.code)

    init, sid, reply, pids, closed, (other, code) = run(body)
    mcp = init.agent_capabilities.mcp_capabilities
    assert (mcp.http, mcp.sse) == (True, False)
    assert reply.stop_reason == "end_turn"
    first = chat_bodies(fake_server)[0]
    assert "mcp__demo__echo" in {tool["function"]["name"] for tool in first["tools"]}
    assert chat_bodies(fake_server)[1]["messages"][-1]["content"] == "echo: ping"
    started = [u for s, u in client.updates if s == sid and u.session_update == "tool_call"]
    assert started[0].title == "demo: echo ping"
    assert "MCP server 'old' not started: its SSE transport is not supported" in client.texts(sid)
    assert closed == [True, True]
    assert code == -32602
    assert wait_for(lambda: process_gone(pids[1]), 15), "stdin EOF left the other session's MCP server"
    assert other != sid


def test_a_session_held_by_the_terminal_is_refused_with_a_clear_error(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_text("First answer.")
    client = RecordingClient()
    sessions = Path(os.environ["NANOHERMES_SESSIONS_DIR"])

    async def body() -> tuple[RequestError, RequestError, Any]:
        async with running_server(fake_server.url, client) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("hello")])
            await conn.close_session(session_id=sid)  # lock released: the terminal takes it
            with SessionLock.acquire(sessions / f"{sid}.json"):
                with pytest.raises(RequestError) as load:
                    await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
                with pytest.raises(RequestError) as resume:
                    await conn.resume_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            loaded = await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            return load.value, resume.value, loaded

    load, resume, loaded = run(body)
    for refused in (load, resume):
        assert f"is open in another nanohermes (pid {os.getpid()})" in str(refused)
        assert refused.data["reason"] == "session_in_use"
    assert loaded.modes.current_mode_id == "ask"


def test_close_cancels_a_running_prompt_and_the_session_can_be_resumed(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_text("slow " * 200, delay=0.05, match="long one")
    fake_server.push_text("Resumed.", match="after resume")
    client = RecordingClient()

    async def body() -> tuple[Any, Any, int]:
        async with running_server(fake_server.url, client) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            running = await streaming_prompt(conn, client, sid, "long one")
            await conn.close_session(session_id=sid)
            cut = await running
            before = len(client.updates)
            await conn.resume_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            replayed = [
                u for _, u in client.updates[before:] if u.session_update != "available_commands_update"
            ]
            reply = await conn.prompt(session_id=sid, prompt=[text_block("after resume")])
            return cut, reply, len(replayed)

    cut, reply, replayed = run(body)
    assert cut.stop_reason == "cancelled"
    assert reply.stop_reason == "end_turn"
    assert replayed == 0  # resume does not replay the history (load does)
    history = chat_bodies(fake_server)[-1]["messages"]
    assert [m["role"] for m in history[1:]] == ["user", "assistant", "user"]
