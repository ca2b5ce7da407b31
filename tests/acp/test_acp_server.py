"""End to end: the real `nanohermes acp` process, driven by the SDK's client side, against the fake
OpenAI-compatible endpoint (real sockets). HOME and the nanohermes directories are per test."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp_harness import RecordingClient, capabilities, running_server, stderr_text
from fake_server import FakeServer
from fake_server import fake_server as fake_server

DISTILL = "durable long-term memories"


def run(body: Callable[[], Awaitable[Any]], timeout: float = 60.0) -> Any:
    return asyncio.run(asyncio.wait_for(body(), timeout))


def sessions_dir() -> Path:
    return Path(os.environ["NANOHERMES_SESSIONS_DIR"])


def memory_file() -> Path:
    return Path(os.environ["NANOHERMES_MEMORY_DIR"]) / "memory.json"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path.resolve()


def chat_bodies(server: FakeServer) -> list[dict[str, Any]]:
    return [b for b in server.bodies if DISTILL not in json.dumps(b)]


def test_plain_turn_streams_the_answer_and_saves_the_session(fake_server: FakeServer, workspace: Path) -> None:
    fake_server.push_text("Hello from nanohermes, streamed in pieces.", reasoning="thinking it over")
    client = RecordingClient()

    async def body() -> tuple[Any, Any, str]:
        async with running_server(fake_server.url, client) as (conn, process):
            init = await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            reply = await conn.prompt(session_id=new.session_id, prompt=[text_block("say hello")])
        assert process.returncode == 0, stderr_text(process)
        return init, reply, new.session_id

    init, reply, sid = run(body)
    assert init.protocol_version == 1
    assert init.agent_capabilities.load_session is True
    assert init.agent_capabilities.prompt_capabilities.embedded_context is True
    assert reply.stop_reason == "end_turn"
    assert client.texts(sid) == "Hello from nanohermes, streamed in pieces."
    assert client.texts(sid, "agent_thought_chunk") == "thinking it over"
    assert len(client.of_kind(sid, "agent_message_chunk")) > 1
    commands = client.of_kind(sid, "available_commands_update")
    assert {c.name for c in commands[0].available_commands} == {"compact", "memory", "reset"}
    saved = json.loads((sessions_dir() / f"{sid}.json").read_text())
    assert saved["workspace"] == str(workspace)
    assert [m["role"] for m in saved["messages"]] == ["system", "user", "assistant"]
    assert chat_bodies(fake_server)[0]["messages"][-1]["content"] == "say hello"
