"""The ACP agent the SDK routes JSON-RPC to (SPEC §9): many sessions, one process. Each session's
Agent is built by the composition root (`factory`), so a turn here is exactly a REPL turn."""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import secrets
import time
import weakref
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import PROTOCOL_VERSION, RequestError, schema
from acp.helpers import update_available_commands

from nanohermes import __version__
from nanohermes.acp import commands, convert
from nanohermes.acp.session import AcpSession, Opened
from nanohermes.agent.custom_commands import load_commands
from nanohermes.core.errors import NanoHermesError, SessionInUse
from nanohermes.core.events import Note
from nanohermes.core.protocols import Approver
from nanohermes.sessions.store import EDITOR_HINTS

if TYPE_CHECKING:
    from acp.interfaces import Client

    from nanohermes.agent.loop import Agent
    from nanohermes.config.mcp_config import McpServerConfig
    from nanohermes.config.settings import Settings
    from nanohermes.memory import MemoryStore
    from nanohermes.tools.files import FileTools

log = logging.getLogger("nanohermes.acp")
SESSION_ID = re.compile(r"[A-Za-z0-9_.-]{1,128}")
CURSOR = re.compile(r"[0-9]{1,9}")  # session/list's: the number of sessions before the page
SHOWN_CHARS = 100
SHUTDOWN_TURN_GRACE = 10.0
MODES = [
    schema.SessionMode(id="read-only", name="Read-only", description="only reading and memory tools"),
    schema.SessionMode(id="ask", name="Ask", description="ask before every write, edit and shell command"),
    schema.SessionMode(id="auto", name="Auto", description="write, edit and run commands without asking"),
]
FilesFactory = Callable[[Path, int], "FileTools"]
AgentFactory = Callable[[Path, Path, Approver, FilesFactory | None, Mapping[str, "McpServerConfig"]], Opened]
"""(session file, workspace, approver, file tools, the client's MCP servers) → the session opened.
Raises NanoHermesError (SessionInUse when another process holds the session)."""


class NanohermesAcpAgent:
    def __init__(
        self, settings: Settings, factory: AgentFactory, stores: Callable[[Path], MemoryStore | None]
    ) -> None:
        self.settings, self.factory, self.stores = settings, factory, stores
        self.sessions: dict[str, AcpSession] = {}
        self.client: Client | None = None
        self.fs_read = self.fs_write = False
        self._tasks: set[asyncio.Task[Any]] = set()
        # one opening or closing at a time per id (weak: ids tried and never opened do not pile up)
        self._id_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._retired: list[Agent] = []  # closed sessions' agents, their distillation maybe running

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: schema.ClientCapabilities | None = None,
        client_info: schema.Implementation | None = None,
        **kwargs: Any,
    ) -> schema.InitializeResponse:
        fs = client_capabilities.fs if client_capabilities else None
        self.fs_read = bool(fs and fs.read_text_file)
        self.fs_write = bool(fs and fs.write_text_file)
        if client_info is not None:
            log.info("client %s %s, protocol %s", client_info.name, client_info.version, protocol_version)
        capabilities = schema.AgentCapabilities(
            load_session=True,
            prompt_capabilities=schema.PromptCapabilities(image=False, audio=False, embedded_context=True),
            mcp_capabilities=schema.McpCapabilities(http=True, sse=False),
            session_capabilities=schema.SessionCapabilities(
                list=schema.SessionListCapabilities(),
                close=schema.SessionCloseCapabilities(),
                resume=schema.SessionResumeCapabilities(),
            ),
        )
        version = PROTOCOL_VERSION if protocol_version < 1 else min(protocol_version, PROTOCOL_VERSION)
        return schema.InitializeResponse(
            protocol_version=version,
            agent_capabilities=capabilities,
            agent_info=schema.Implementation(name="nanohermes", title="nanohermes", version=__version__),
            auth_methods=[],
        )

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> schema.NewSessionResponse:
        workspace = workspace_of(cwd)
        servers, skipped = convert.mcp_configs(mcp_servers or [])
        session = await self._open(self._new_id(), workspace, servers, skipped)  # fresh: nothing to lock
        self._announce_commands(session)
        return schema.NewSessionResponse(session_id=session.id, modes=self._modes(session))

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> schema.LoadSessionResponse:
        session = await self._resume(cwd, session_id, mcp_servers)
        assert session.agent is not None
        for update in convert.replay(session.agent.messages[1:], session.workspace):
            await session.send(update)
        self._announce_commands(session)
        return schema.LoadSessionResponse(modes=self._modes(session))

    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> schema.ResumeSessionResponse:
        """session/load without the replay (the client still shows the conversation)."""
        session = await self._resume(cwd, session_id, mcp_servers)
        self._announce_commands(session)
        return schema.ResumeSessionResponse(modes=self._modes(session))

    async def close_session(self, session_id: str, **kwargs: Any) -> schema.CloseSessionResponse:
        """Under the id's lock: a session/load still in flight opens it first."""
        async with self._id_locks.setdefault(session_id, asyncio.Lock()):
            await self._close(self._session(session_id))
        return schema.CloseSessionResponse()

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> schema.ListSessionsResponse:
        if cursor and not CURSOR.fullmatch(cursor):
            raise RequestError.invalid_params({"details": f"bad cursor {shown(cursor)}"})
        start = int(cursor or 0)
        return await asyncio.to_thread(convert.session_list, self.settings.sessions_dir, cwd, start)

    async def set_session_mode(
        self, mode_id: str, session_id: str, **kwargs: Any
    ) -> schema.SetSessionModeResponse:
        session = self._session(session_id)
        if mode_id not in {mode.id for mode in MODES}:
            raise RequestError(-32602, f"unknown mode {shown(mode_id)}; use read-only, ask or auto")
        assert session.agent is not None
        session.agent.set_permission(mode_id)
        session.mode = mode_id
        return schema.SetSessionModeResponse()

    async def prompt(
        self, prompt: list[convert.PromptBlock], session_id: str, **kwargs: Any
    ) -> schema.PromptResponse:
        session = self._session(session_id)
        assert session.agent is not None  # _session checked it
        text = convert.prompt_text(prompt)
        if not text:
            raise RequestError.invalid_params({"details": "the prompt is empty"})
        state_dir = self.settings.state_dir
        source = commands.command_source(text, session.agent, session.workspace, state_dir, self.stores)
        return schema.PromptResponse(stop_reason=await session.run(source))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            log.warning("session/cancel for unknown session %r ignored", session_id)
            return
        session.cancel()

    async def shutdown(self, unanswered: Callable[[], int]) -> None:
        """End of input: every request read is answered (turns cancelled), sessions closed, distilled."""
        deadline = time.monotonic() + SHUTDOWN_TURN_GRACE
        while unanswered() and time.monotonic() < deadline:
            for session in self.sessions.values():
                session.cancel()
            await asyncio.sleep(0.02)
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=1.0)
        await asyncio.gather(*(self._close(session) for session in list(self.sessions.values())))
        timeout = self.settings.request_timeout + 5
        waits = [asyncio.to_thread(agent.wait_for_distillation, timeout) for agent in self._retired]
        for agent, finished in zip(self._retired, await asyncio.gather(*waits), strict=True):
            if not finished:
                log.warning("a distillation of %s did not finish in time", agent.session_path.name)

    async def _close(self, session: AcpSession) -> None:
        if self.sessions.get(session.id) is session:
            del self.sessions[session.id]
        deadline = time.monotonic() + SHUTDOWN_TURN_GRACE
        while session.turn is not None and time.monotonic() < deadline:
            session.cancel()
            await asyncio.sleep(0.01)
        agent = session.agent
        if agent is None:
            return
        session.agent = None
        await asyncio.to_thread(_save_and_release, agent, session.release)
        self._retired = [a for a in self._retired if not a.wait_for_distillation(0)]
        self._retired.append(agent)

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None or session.agent is None:
            raise RequestError(
                -32602, f"unknown session {shown(session_id)} (create it with session/new or session/load)"
            )
        return session

    def _path(self, session_id: str) -> Path:
        return self.settings.sessions_dir / f"{session_id}.json"

    def _new_id(self) -> str:
        while True:
            session_id = f"{datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"
            if session_id not in self.sessions and not self._path(session_id).exists():
                return session_id

    async def _resume(self, cwd: str, session_id: str, mcp_servers: Any) -> AcpSession:
        """The session open here, or opened from its file (again if its workspace or MCP servers differ)."""
        workspace = workspace_of(cwd)
        servers, skipped = convert.mcp_configs(mcp_servers or [])
        not_saved = RequestError(
            -32602, f"no saved session {shown(session_id)} in {self.settings.sessions_dir}"
        )
        if not SESSION_ID.fullmatch(session_id):
            raise not_saved
        async with self._id_locks.setdefault(session_id, asyncio.Lock()):
            session = self.sessions.get(session_id)
            if session is not None and session.turn is not None:
                raise RequestError.invalid_request({"details": f"session {session_id} is running a prompt"})
            if session is not None and (session.workspace, session.servers) == (workspace, servers):
                return session
            if session is None and not self._path(session_id).is_file():
                raise not_saved
            if session is not None:  # one with no turn yet has no file: it is opened again all the same
                await self._close(session)
            return await self._open(session_id, workspace, servers, skipped)

    async def _open(
        self, session_id: str, workspace: Path, servers: dict[str, McpServerConfig], skipped: list[str]
    ) -> AcpSession:
        if not self.settings.model:
            raise RequestError(-32603, "no model configured: start with --model NAME or set NANOHERMES_MODEL")
        assert self.client is not None  # the connection calls on_connect first
        session = AcpSession(session_id, workspace, self.client, self.settings.permission)
        files = self._files_factory(session)
        path = self._path(session_id)
        try:
            opened = await asyncio.to_thread(self.factory, path, workspace, session.approve, files, servers)
        except SessionInUse as err:
            holder = str(err).rpartition("(")[2].rstrip(")")  # `pid N`, as the lock's message ends
            raise RequestError(
                -32603,
                f"session {session_id} is open in another nanohermes ({holder}): "
                "quit it there (or close that thread), then open this one again",
                {"reason": "session_in_use", "path": str(path)},
            ) from None
        except NanoHermesError as err:
            err.hint = EDITOR_HINTS.get(err.hint, err.hint)  # no `--session NAME` to give in an editor
            raise RequestError(-32603, err.one_line()) from None
        session.agent, session.release, session.servers = opened.agent, opened.close, servers
        for note in skipped:
            opened.agent.post_note(Note(note, "warning"))
        self.sessions[session_id] = session
        return session

    def _files_factory(self, session: AcpSession) -> FilesFactory | None:
        if not (self.fs_read or self.fs_write):
            return None
        from nanohermes.acp.clientfs import client_file_tools

        return functools.partial(client_file_tools, client=session, reads=self.fs_read, writes=self.fs_write)

    def _modes(self, session: AcpSession) -> schema.SessionModeState:
        return schema.SessionModeState(current_mode_id=session.mode, available_modes=MODES)

    def _announce_commands(self, session: AcpSession) -> None:
        """The slash commands, sent once the current request is answered (its session id known then)."""

        async def later() -> None:
            await asyncio.sleep(0)  # the reply is written first
            home = self.settings.state_dir
            custom, problems = await asyncio.to_thread(load_commands, session.workspace, home)
            for problem in problems:  # shown in the next turn
                if session.agent is not None:
                    session.agent.post_note(Note(problem, "warning"))
            try:
                await session.send(update_available_commands(commands.available_commands(custom)))
            except (ConnectionError, RequestError) as err:
                log.info("notification not sent: %s", err)

        task = asyncio.ensure_future(later())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _save_and_release(agent: Agent, release: Callable[[], None]) -> None:
    try:
        agent.save()
    except NanoHermesError as err:
        log.error("%s", err.one_line())
    finally:
        release()


def shown(text: str) -> str:
    """A client's id or name quoted for an error message: a 10 KB id is cut, not echoed whole."""
    return repr(text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}…")


def workspace_of(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_absolute():
        raise RequestError(-32602, f"cwd must be an absolute path, not {shown(cwd)}")
    try:
        if path.is_dir():
            return path.resolve()
    except OSError as err:  # a name too long for the file system, a directory we may not search
        raise RequestError(-32602, f"cwd {shown(cwd)} cannot be used: {err.strerror or err}") from None
    raise RequestError(-32602, f"cwd {shown(cwd)} is not a directory")
