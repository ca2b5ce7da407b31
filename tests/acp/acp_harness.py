"""Drive the real `nanohermes acp` subprocess with the SDK's client side (`acp.spawn_agent_process`).

async with running_server(fake_server, client) as conn:
    await conn.initialize(protocol_version=1)
    new = await conn.new_session(cwd=str(workspace))
    reply = await conn.prompt(session_id=new.session_id, prompt=[text_block("hi")])
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from acp import RequestError, schema, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection

SCRIPT = Path(sys.executable).with_name("nanohermes")
KEY = "sk-acp-test-0123456789abcdef"
SHUTDOWN_TIMEOUT = 20.0
"""Seconds the server has after stdin closes (saving, closing MCP servers) before SIGTERM: generous, as
tests check it exits 0 on its own even on a busy machine."""


class RecordingClient:
    """An ACP client: records every update, answers permission requests with `choice` ("allow_once",
    "reject_once", … or "cancelled"), and serves fs requests from `files` when `fs` is on."""

    def __init__(self, choice: str = "allow_once", fs: bool = False) -> None:
        self.choice = choice
        self.fs = fs
        self.updates: list[tuple[str, Any]] = []
        self.permission_requests: list[schema.RequestPermissionRequest] = []
        self.files: dict[str, str] = {}
        self.fs_calls: list[tuple[str, str]] = []

    def on_connect(self, conn: Any) -> None:
        return None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def request_permission(
        self,
        options: list[schema.PermissionOption],
        session_id: str,
        tool_call: schema.ToolCallUpdate,
        **kwargs: Any,
    ) -> schema.RequestPermissionResponse:
        self.permission_requests.append(
            schema.RequestPermissionRequest(options=options, session_id=session_id, tool_call=tool_call)
        )
        if self.choice == "cancelled":
            return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=self.choice)
        )

    async def read_text_file(self, path: str, session_id: str, **kwargs: Any) -> schema.ReadTextFileResponse:
        self.fs_calls.append(("read", path))
        if path not in self.files:
            raise RequestError.resource_not_found(path)
        return schema.ReadTextFileResponse(content=self.files[path])

    async def write_text_file(
        self, content: str, path: str, session_id: str, **kwargs: Any
    ) -> schema.WriteTextFileResponse:
        self.fs_calls.append(("write", path))
        self.files[path] = content
        return schema.WriteTextFileResponse()

    def texts(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        return "".join(
            u.content.text
            for sid, u in self.updates
            if sid == session_id and u.session_update == kind and hasattr(u.content, "text")
        )

    def of_kind(self, session_id: str, kind: str) -> list[Any]:
        return [u for sid, u in self.updates if sid == session_id and u.session_update == kind]


def capabilities(fs: bool) -> schema.ClientCapabilities:
    return schema.ClientCapabilities(
        fs=schema.FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=False
    )


@contextlib.asynccontextmanager
async def running_server(
    base_url: str, client: RecordingClient, *extra: str, cwd: Path | None = None
) -> AsyncIterator[tuple[ClientSideConnection, Any]]:
    """The server process (stderr to a temp file, see `.stderr_text`), connected."""
    env = {name: value for name, value in os.environ.items() if name.startswith(("NANOHERMES_", "LANG"))}
    env.update({"NANOHERMES_API_KEY": KEY, "HOME": os.environ["HOME"]})
    with tempfile.TemporaryFile() as stderr:
        args = ["acp", "--base-url", base_url, "--model", "fake-model", *extra]
        options = {"stderr": stderr.fileno(), "shutdown_timeout": SHUTDOWN_TIMEOUT}
        spawned: list[Any] = []
        try:
            async with spawn_agent_process(
                client, str(SCRIPT), *args, env=env, cwd=cwd, transport_kwargs=options
            ) as (conn, process):
                process.stderr_file = stderr
                spawned.append(process)
                yield conn, process
        finally:
            for process in spawned:  # read before the file goes away
                process.stderr_kept = stderr_text(process)


def stderr_text(process: Any) -> str:
    """What the server wrote to stderr so far (all of it, once its context has ended)."""
    if hasattr(process, "stderr_kept"):
        return str(process.stderr_kept)
    handle = process.stderr_file
    handle.seek(0)
    return str(handle.read().decode("utf-8", "replace"))


async def streaming_prompt(conn: ClientSideConnection, client: RecordingClient, sid: str, text: str) -> Any:
    """Start a prompt and return its future once its first text has arrived (the turn is running)."""

    future = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(text)]))
    while not client.texts(sid):
        await asyncio.sleep(0.02)
    return future


def prompt_once(base_url: str, client: RecordingClient, workspace: Path, text: str) -> tuple[str, Any]:
    """(session id, reply) of one prompt in a new session; the server then exits cleanly."""

    async def body() -> tuple[str, Any]:
        async with running_server(base_url, client) as (conn, process):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            reply = await conn.prompt(session_id=new.session_id, prompt=[text_block(text)])
        assert process.returncode == 0, stderr_text(process)
        return new.session_id, reply

    result: tuple[str, Any] = asyncio.run(asyncio.wait_for(body(), 60))
    return result
