"""Every configured MCP server of one runtime, on one asyncio event-loop thread.

Servers start in parallel in the background, off the prompt's path. One that fails, crashes or
times out gives one notice; the others keep working. A crashed server is restarted by its next call."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from nanohermes.config.mcp_config import McpServerConfig, expand_variables
from nanohermes.core.errors import ToolError
from nanohermes.core.types import plural
from nanohermes.mcp.logs import ServerLogs
from nanohermes.mcp.tools import ListedTool, build_tools, offered, render_result, unusable
from nanohermes.tools.base import Tool

if TYPE_CHECKING:
    from nanohermes.mcp.connection import Connection

IMPORT_SLACK = 10.0  # what a first turn waits for a starting server beyond its startup_timeout
CLOSE_TIMEOUT = 10.0
MAX_TOOLS = 100
"""MCP tools offered at most: OpenAI-compatible APIs refuse requests with more than 128 tools in all."""
State = Literal["disabled", "starting", "ready", "crashed", "failed", "closed"]


@dataclass(frozen=True)
class ToolInfo:
    name: str  # as the model sees it: mcp__server__tool
    description: str
    read_only: bool


@dataclass(frozen=True)
class ServerStatus:
    name: str
    transport: str
    target: str
    state: State
    trusted: bool
    tools: tuple[ToolInfo, ...]
    last_error: str


@dataclass
class ServerEntry:
    """One configured server, as the manager tracks it (mutated on the loop, under its lock)."""

    name: str
    config: McpServerConfig
    state: State = "starting"
    tools: list[Tool] = field(default_factory=list)
    last_error: str = ""
    connection: Connection | None = None
    started: threading.Event = field(default_factory=threading.Event)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one restart at a time
    stale: bool = False  # its tool list changed and was not listed again yet
    refresh: asyncio.Task[None] | None = None
    left_out: dict[str, str] = field(default_factory=dict)  # name → why, as last told to the user

    def status(self) -> ServerStatus:
        config = self.config
        tools = tuple(ToolInfo(tool.name, tool.description, not tool.mutating) for tool in self.tools)
        return ServerStatus(
            self.name, config.transport, config.target(), self.state, config.trusted, tools, self.last_error
        )


class McpManager:
    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        *,
        cwd: Path,
        log_dir: Path | None = None,
        on_notice: Callable[[str], None] | None = None,
    ) -> None:
        """`on_notice` is called on the loop thread with one line when a server fails, crashes or restarts."""
        self._servers = {name: ServerEntry(name, config) for name, config in servers.items()}
        for server in self._servers.values():
            if not server.config.enabled:
                server.state = "disabled"
                server.started.set()
        self._cwd = cwd
        self._on_notice = on_notice
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._logs = ServerLogs(log_dir)
        self._closed = False
        self._told_too_many = False
        self._pending: set[Future[str]] = set()

    def start(self) -> None:
        enabled = [s for s in self._servers.values() if s.state == "starting"]
        if enabled:
            logging.getLogger("mcp").addHandler(logging.NullHandler())  # no SDK tracebacks on the terminal
            loop = self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._run_loop, args=(loop,), name="nh-mcp", daemon=True)
            self._thread.start()
            for server in enabled:  # in parallel
                asyncio.run_coroutine_threadsafe(self._start(server), loop)

    def _run_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        loop.set_exception_handler(lambda _loop, _context: None)  # stray task errors: not the terminal's
        try:
            loop.run_forever()
        finally:  # as asyncio.run ends, but without its unbounded wait for the default executor
            # (3.11): a host-name lookup of an HTTP server that hangs there must not hang the exit
            tasks = asyncio.all_tasks(loop)
            for task in tasks:  # the calls still running: their callers hear they were cancelled
                task.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is not None and thread is not None:
            future = asyncio.run_coroutine_threadsafe(self._close_all(), loop)
            try:
                future.result(CLOSE_TIMEOUT)
            except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
                future.cancel()
            loop.call_soon_threadsafe(loop.stop)
            thread.join(CLOSE_TIMEOUT)
        for pending in list(self._pending):  # calls that raced with close: never started on the loop
            pending.cancel()
        self._logs.close()
        with self._lock:
            for server in self._servers.values():
                server.state = "disabled" if server.state == "disabled" else "closed"
                server.tools = []
                server.started.set()

    def wait_started(self, timeout: float) -> bool:
        """True when no server is still starting."""
        deadline = time.monotonic() + timeout
        return all(s.started.wait(max(0.0, deadline - time.monotonic())) for s in self._servers.values())

    def tools(self) -> list[Tool]:
        """Tools of the servers up (a crashed one's too: its next call restarts it), once those still
        starting are up or past their startup_timeout (a first turn sees their tools)."""
        if self._thread is not None and not self._closed:
            for server in list(self._servers.values()):
                server.started.wait(server.config.startup_timeout + IMPORT_SLACK)
        with self._lock:
            live = [(s.name, s.tools) for s in self._servers.values() if s.state in ("ready", "crashed")]
        tools, left_out = offered(live, MAX_TOOLS)
        if left_out and not self._told_too_many:
            self._told_too_many = True
            self._notice(
                f"MCP servers offer {len(tools) + left_out} tools: only the first {MAX_TOOLS} are "
                "offered to the model (APIs take at most 128 tools); disable the servers you do not need"
            )
        return tools

    def status(self) -> list[ServerStatus]:
        with self._lock:
            return [server.status() for server in self._servers.values()]

    def submit(self, server: str, tool: str, arguments: dict[str, Any]) -> concurrent.futures.Future[str]:
        """A call started on the loop: its future gives the text or raises ToolError (cancelling it sends
        MCP's `notifications/cancelled`)."""
        loop = self._loop
        target = self._servers.get(server)
        if loop is None or target is None or self._closed:
            raise ToolError(f"MCP server {server} is not running")
        call = self._call(target, tool, arguments)
        try:
            future = asyncio.run_coroutine_threadsafe(call, loop)
        except RuntimeError:  # the loop closed meanwhile
            call.close()
            raise ToolError(f"MCP server {server} is not running") from None
        self._pending.add(future)  # close() cancels what it leaves unanswered
        future.add_done_callback(self._pending.discard)
        return future

    # -- on the loop thread

    async def _start(self, server: ServerEntry, failed: str = "failed to start") -> bool:
        from nanohermes.mcp.connection import Connection, describe_error

        try:
            config = expand_variables(server.config, os.environ)
            errlog = self._logs.open(server.name)
            changed = functools.partial(self._tools_changed, server)
            connection = Connection(
                server.name, config, cwd=self._cwd, errlog=errlog, on_tools_changed=changed
            )
            server.connection, server.stale = connection, False
            self._set_tools(server, await connection.open())
            if server.stale:  # it changed while the first list was on its way
                self._tools_changed(server)
        except Exception as err:
            timeout = server.config.startup_timeout
            timed_out = f"did not answer within {timeout:g} s (raise startup_timeout)"
            reason = timed_out if isinstance(err, TimeoutError) else describe_error(err)
            tail = self._logs.tail(server.name)
            self._fail(server, "failed", f"{reason}; stderr: {tail}" if tail else reason)
            self._notice(f"MCP server {server.name} {failed}: {server.last_error}")
            return False
        finally:
            server.started.set()
        return True

    def _set_tools(self, server: ServerEntry, listed: list[ListedTool]) -> None:
        name = server.name
        listed = [spec for spec in listed if server.config.offers(spec.name)]
        left_out = unusable(listed)
        listed = [spec for spec in listed if spec.name not in left_out]
        problem = self._tell_left_out(server, left_out)
        tools = build_tools(name, server.config, listed, functools.partial(self.submit, name))
        with self._lock:
            if not self._closed:
                server.state, server.tools, server.last_error = "ready", tools, problem

    def _tell_left_out(self, server: ServerEntry, left_out: dict[str, str]) -> str:
        """Why tools were left out ("" if none), noticed again only when it changes (a flood of
        tools/list_changed must not flood the terminal)."""
        problems: list[str] = []
        for reason in dict.fromkeys(left_out.values()):
            names = sorted(name for name, why in left_out.items() if why == reason)
            shown = ", ".join(name[:64] for name in names[:3]) + (", …" if len(names) > 3 else "")
            problems.append(f"left out {plural(len(names), 'tool')} ({reason}): {shown}")
        problem = "; ".join(problems)
        if problem and left_out != server.left_out:
            self._notice(f"MCP server {server.name}: {problem}")
        server.left_out = left_out
        return problem

    def _tools_changed(self, server: ServerEntry) -> None:
        """List the tools again: one listing at a time, another if they changed meanwhile."""
        server.stale = True
        if server.refresh is None or server.refresh.done():
            server.refresh = asyncio.get_running_loop().create_task(self._refresh(server))

    async def _refresh(self, server: ServerEntry) -> None:
        from nanohermes.mcp.connection import describe_error

        while server.stale and server.connection is not None and _ready(server):
            server.stale = False
            try:
                async with asyncio.timeout(server.config.startup_timeout):
                    listed = await server.connection.list_tools()
            except Exception as err:
                reason = describe_error(err)
                self._notice(f"MCP server {server.name} changed its tools but could not list them: {reason}")
                return
            self._set_tools(server, listed)

    async def _call(self, server: ServerEntry, tool: str, arguments: dict[str, Any]) -> str:
        from nanohermes.mcp.connection import CallFailed, ServerGone, describe_error

        await self._ensure_running(server)
        connection = server.connection
        assert connection is not None
        timeout = server.config.tool_timeout
        try:
            async with asyncio.timeout(timeout):  # not wait_for: that wraps the call in one more task
                result = await connection.call(tool, arguments)
        except TimeoutError:
            raise ToolError(f"{tool} on MCP server {server.name} timed out after {timeout:g} s") from None
        except ServerGone as err:
            reason = f"{describe_error(err)}{self._logs.hint(server.name)}"
            if server.state == "ready":
                self._fail(server, "crashed", reason)
                self._notice(f"MCP server {server.name} stopped: {reason}")
            message = f"MCP server {server.name} stopped: {reason} (it restarts on the next call)"
            raise ToolError(message) from None
        except CallFailed as err:
            raise ToolError(f"MCP server {server.name}: {err}") from None
        if result.get("isError"):
            raise ToolError(render_result(result, f"{tool} on MCP server {server.name} failed (no details)"))
        return render_result(result)

    async def _ensure_running(self, server: ServerEntry) -> None:
        if _ready(server):  # the usual case: no lock to take
            return
        async with server.lock:
            if server.state == "crashed":
                if server.connection is not None:
                    await server.connection.close()
                if not await self._start(server, "could not be restarted"):
                    raise ToolError(f"MCP server {server.name} could not be restarted: {server.last_error}")
                self._notice(f"MCP server {server.name} restarted after a crash")
            if server.state != "ready":
                detail = f": {server.last_error}" if server.last_error else ""
                raise ToolError(f"MCP server {server.name} is {server.state}{detail}")

    async def _close_all(self) -> None:
        connections = [s.connection for s in self._servers.values() if s.connection is not None]
        await asyncio.gather(*(connection.close() for connection in connections))

    def _notice(self, text: str) -> None:
        if self._on_notice is not None and not self._closed:
            self._on_notice(text)

    def _fail(self, server: ServerEntry, state: State, reason: str) -> None:
        with self._lock:
            server.state, server.last_error = state, reason
            if state == "failed":
                server.tools = []


def _ready(server: ServerEntry) -> bool:
    # a function: mypy would take the state narrowed before an `await` for the state after it
    return server.state == "ready"
