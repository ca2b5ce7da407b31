"""`nanohermes acp`: the Agent Client Protocol server (SPEC §9) — many sessions, one process.

The `acp` SDK parses and routes JSON-RPC; this module answers it. Each session is an AcpSession
around an Agent built by the composition root (`factory`), so a turn here is exactly a REPL turn:
memory injected, tools confined to the session's `cwd`, session file saved, distillation in the
background into the one MemoryStore every session shares.
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from acp import PROTOCOL_VERSION, RequestError, schema
from acp.agent.connection import AgentSideConnection
from acp.helpers import update_available_commands

from nanohermes import __version__
from nanohermes.acp import commands, convert
from nanohermes.acp.session import AcpSession, Bridge
from nanohermes.acp.transport import open_transport, protocol_files
from nanohermes.errors import NanoHermesError, SessionError
from nanohermes.protocols import Approver

if TYPE_CHECKING:
    from acp.interfaces import Agent as AcpAgent
    from acp.interfaces import Client

    from nanohermes.agent import Agent
    from nanohermes.memory import MemoryStore
    from nanohermes.settings import Settings
    from nanohermes.tools.files import FileTools

log = logging.getLogger("nanohermes.acp")
SESSION_ID = re.compile(r"[A-Za-z0-9_.-]{1,128}")
LIST_PAGE = 50
SHUTDOWN_TURN_GRACE = 10.0
MODES = [
    schema.SessionMode(id="read-only", name="Read-only", description="only reading and memory tools"),
    schema.SessionMode(id="ask", name="Ask", description="ask before every write, edit and shell command"),
    schema.SessionMode(id="auto", name="Auto", description="write, edit and run commands without asking"),
]
SWITCH_INTERVAL = 0.0005
"""Seconds a thread may hold the GIL while another waits (Python's default is 5 ms): each update
hops from a turn's worker to the event loop, and the default makes every hop wait up to 5 ms."""
FilesFactory = Callable[[Path, int], "FileTools"]


class AgentFactory(Protocol):
    """Builds one session's Agent (the composition root's `build_agent`). Raises NanoHermesError."""

    def __call__(
        self, session_path: Path, workspace: Path, approver: Approver, files: FilesFactory | None
    ) -> Agent: ...


class NanohermesAcpAgent:
    """The `acp.interfaces.Agent` implementation."""

    def __init__(
        self, settings: Settings, factory: AgentFactory, stores: Callable[[Path], MemoryStore | None]
    ) -> None:
        self.settings, self.factory, self.stores = settings, factory, stores
        self.sessions: dict[str, AcpSession] = {}
        self.client: Client | None = None
        self.fs_read = self.fs_write = False
        self._tasks: set[asyncio.Task[Any]] = set()

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    # -- set-up ----------------------------------------------------------------------------------

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
            mcp_capabilities=schema.McpCapabilities(http=False, sse=False),
            session_capabilities=schema.SessionCapabilities(list=schema.SessionListCapabilities()),
        )
        return schema.InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION)
            if protocol_version >= 1
            else PROTOCOL_VERSION,
            agent_capabilities=capabilities,
            agent_info=schema.Implementation(name="nanohermes", title="nanohermes", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> schema.AuthenticateResponse | None:
        raise RequestError.invalid_params({"details": "nanohermes needs no authentication (no auth methods)"})

    # -- sessions --------------------------------------------------------------------------------

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> schema.NewSessionResponse:
        workspace = _workspace(cwd)
        _ignored_mcp(mcp_servers)
        session_id = self._new_id()
        session = await self._open(session_id, workspace)
        self._after_reply(self._announce_commands(session))
        return schema.NewSessionResponse(session_id=session.id, modes=self._modes(session))

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> schema.LoadSessionResponse:
        workspace = _workspace(cwd)
        _ignored_mcp(mcp_servers)
        session = self.sessions.get(session_id)
        if session is None:
            if not SESSION_ID.fullmatch(session_id) or not self._path(session_id).is_file():
                raise RequestError(-32602, f"no saved session {session_id!r} in {self.settings.sessions_dir}")
            session = await self._open(session_id, workspace)
        elif session.turn is not None:
            raise RequestError.invalid_request({"details": f"session {session_id} is running a prompt"})
        assert session.agent is not None
        for update in convert.replay(session.agent.messages[1:], session.workspace):
            await self._client().session_update(session_id=session.id, update=update)
        self._after_reply(self._announce_commands(session))
        return schema.LoadSessionResponse(modes=self._modes(session))

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> schema.ListSessionsResponse:
        start = 0
        if cursor:
            if not cursor.isdigit():
                raise RequestError.invalid_params({"details": f"bad cursor {cursor!r}"})
            start = int(cursor)
        infos, more = await asyncio.to_thread(self._session_infos, cwd, start)
        return schema.ListSessionsResponse(
            sessions=infos, next_cursor=str(start + LIST_PAGE) if more else None
        )

    async def set_session_mode(
        self, mode_id: str, session_id: str, **kwargs: Any
    ) -> schema.SetSessionModeResponse:
        session = self._session(session_id)
        if mode_id not in {mode.id for mode in MODES}:
            raise RequestError(-32602, f"unknown mode {mode_id!r}; use read-only, ask or auto")
        assert session.agent is not None
        session.agent.set_permission(mode_id)
        session.mode = mode_id
        return schema.SetSessionModeResponse()

    async def prompt(
        self, prompt: list[convert.PromptBlock], session_id: str, **kwargs: Any
    ) -> schema.PromptResponse:
        session = self._session(session_id)
        agent = session.agent
        assert agent is not None
        text = convert.prompt_text(prompt)
        if not text:
            raise RequestError.invalid_params({"details": "the prompt is empty"})
        command = commands.command_source(text, agent, self.stores(session.workspace))
        stop = await session.run(
            (lambda _: command) if command is not None else (lambda c: agent.run(text, c))
        )
        session.log_background_notes()
        return schema.PromptResponse(stop_reason=stop)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            log.warning("session/cancel for unknown session %r ignored", session_id)
            return
        session.cancel()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.info("extension notification _%s ignored", method)

    # -- shutdown (stdin closed) -----------------------------------------------------------------

    async def shutdown(self, unanswered: Callable[[], int]) -> None:
        """End of input: answer every request already read (running turns are cancelled), then save
        every session and let distillations finish."""
        deadline = time.monotonic() + SHUTDOWN_TURN_GRACE
        while True:
            for session in self.sessions.values():
                session.cancel()
            if not unanswered() or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.02)
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=1.0)
        agents = [s.agent for s in self.sessions.values() if s.agent is not None]
        await asyncio.gather(*(asyncio.to_thread(self._finish, agent) for agent in agents))

    def _finish(self, agent: Agent) -> None:
        try:
            agent.save()
        except NanoHermesError as err:
            log.error("%s", err.one_line())
        if not agent.wait_for_distillation(self.settings.request_timeout + 5):
            log.warning("a distillation of %s did not finish in time", agent.session_path.name)

    # -- helpers ---------------------------------------------------------------------------------

    def _client(self) -> Client:
        if self.client is None:
            raise RequestError.internal_error({"details": "no client connection"})
        return self.client

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None or session.agent is None:
            raise RequestError(
                -32602, f"unknown session {session_id!r} (create it with session/new or session/load)"
            )
        return session

    def _path(self, session_id: str) -> Path:
        return self.settings.sessions_dir / f"{session_id}.json"

    def _new_id(self) -> str:
        while True:
            session_id = f"{datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"
            if session_id not in self.sessions and not self._path(session_id).exists():
                return session_id

    async def _open(self, session_id: str, workspace: Path) -> AcpSession:
        if not self.settings.model:
            raise RequestError(-32603, "no model configured: start with --model NAME or set NANOHERMES_MODEL")
        loop = asyncio.get_running_loop()
        session = AcpSession(
            session_id, workspace, Bridge(loop, self._client(), session_id), self.settings.permission
        )
        files = self._files_factory(session.bridge)
        try:
            session.agent = await asyncio.to_thread(
                self.factory, self._path(session_id), workspace, session.approve, files
            )
        except NanoHermesError as err:
            raise RequestError(-32603, err.one_line()) from None
        self.sessions[session_id] = session
        return session

    def _files_factory(self, bridge: Bridge) -> FilesFactory | None:
        if not (self.fs_read or self.fs_write):
            return None
        from nanohermes.acp.clientfs import ClientFileTools
        from nanohermes.tools.paths import Workspace

        reads, writes = self.fs_read, self.fs_write
        return lambda root, chars: ClientFileTools(
            Workspace(root), bridge, reads=reads, writes=writes, max_chars=chars
        )

    def _modes(self, session: AcpSession) -> schema.SessionModeState:
        return schema.SessionModeState(current_mode_id=session.mode, available_modes=MODES)

    async def _announce_commands(self, session: AcpSession) -> None:
        update = update_available_commands(commands.available_commands())
        await self._client().session_update(session_id=session.id, update=update)

    def _after_reply(self, coroutine: Any) -> None:
        """Run a notification after the current request is answered (its session id known then)."""

        async def later() -> None:
            await asyncio.sleep(0)  # the reply is queued first: the sender keeps the order
            try:
                await coroutine
            except (ConnectionError, RequestError) as err:
                log.info("notification not sent: %s", err)

        task = asyncio.ensure_future(later())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _session_infos(self, cwd: str | None, start: int) -> tuple[list[schema.SessionInfo], bool]:
        from nanohermes.session import recent_session_files

        infos: list[schema.SessionInfo] = []
        matched = 0
        for path, mtime in recent_session_files(self.settings.sessions_dir):
            header = _header(path)
            if header is None or (cwd is not None and header.get("workspace") != cwd):
                continue
            matched += 1
            if matched <= start:
                continue
            if len(infos) == LIST_PAGE:
                return infos, True
            updated = datetime.fromtimestamp(mtime).astimezone().isoformat(timespec="seconds")
            workspace, title = str(header.get("workspace") or ""), str(header.get("title") or "") or None
            infos.append(
                schema.SessionInfo(session_id=path.stem, cwd=workspace, title=title, updated_at=updated)
            )
        return infos, False


def _header(path: Path) -> dict[str, Any] | None:
    """A session file's workspace and title: from its header (version 2), else from the whole file."""
    from nanohermes.session import SessionFile, read_header, title_of

    header = read_header(path)
    if header is not None:
        return header
    try:
        data = SessionFile(path).load()
    except SessionError:
        return None
    return {"workspace": data.workspace, "title": title_of(data.messages)}


def _ignored_mcp(servers: Any) -> None:
    """MCP capabilities are not advertised (no MCP client yet): servers a client sends anyway are
    named on stderr, not silently dropped."""
    if servers:
        names = ", ".join(str(getattr(server, "name", "?")) for server in servers)
        log.warning("MCP servers from the client are not supported yet and were not started: %s", names)


def _workspace(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_absolute():
        raise RequestError(-32602, f"cwd must be an absolute path, not {cwd!r}")
    if not path.is_dir():
        raise RequestError(-32602, f"cwd {cwd} is not a directory")
    return path.resolve()


class _OneLineFormatter(logging.Formatter):
    """Log lines for stderr; without --verbose an exception is one line, not a traceback."""

    def __init__(self, verbose: bool) -> None:
        super().__init__("nanohermes acp: %(levelname)s: %(message)s")
        self.verbose = verbose

    def formatException(self, ei: Any) -> str:  # noqa: N802 - logging's name
        if self.verbose:
            return super().formatException(ei)
        return f"  {ei[0].__name__}: {ei[1]}" if ei and ei[0] else ""


def serve(
    settings: Settings,
    factory: AgentFactory,
    stores: Callable[[Path], MemoryStore | None],
    *,
    verbose: bool,
) -> int:
    """Serve on stdin/stdout until stdin closes; exit status 0. `stores`: the memory store of a
    workspace (its project's; the same object for every session of that workspace)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLineFormatter(verbose))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    sys.setswitchinterval(SWITCH_INTERVAL)
    proto_in, proto_out = protocol_files()
    return asyncio.run(_serve(NanohermesAcpAgent(settings, factory, stores), proto_in, proto_out))


async def _serve(agent: NanohermesAcpAgent, proto_in: Any, proto_out: Any) -> int:
    transport = await open_transport(proto_in, proto_out)
    connection = AgentSideConnection(cast("AcpAgent", agent), transport, listening=False)
    try:
        await connection.listen()
        await agent.shutdown(transport.unanswered)
    finally:
        await asyncio.shield(connection.close())
    return 0
