"""One MCP server's SDK client, driven on the manager's event loop.

A holder task enters the SDK's `Client` and waits until `close()`: anyio context managers must be left
by the task that entered them. SDK errors become `ServerGone` or `CallFailed`, with a one-line reason."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from pydantic import ValidationError

from nanohermes import __version__
from nanohermes.config.mcp_config import McpServerConfig
from nanohermes.core.errors import ConfigError, NanoHermesError
from nanohermes.mcp.logs import ServerLog
from nanohermes.mcp.stdio import StdioTransport
from nanohermes.mcp.tools import ListedTool

CLOSE_SECONDS = 8.0  # the SDK waits 2 s for a stdio server to exit, then SIGTERM, 2 s, SIGKILL
LIST_PAGES = 100
CLOSED_MESSAGE = "Connection closed"  # the SDK's MCPError when the connection ends
_CONNECTION_ENDED = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)


class ServerGone(NanoHermesError):
    """The connection ended (the server crashed or exited, or the network dropped)."""


class CallFailed(NanoHermesError):
    """The server answered one request with an error."""


class Connection:
    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        *,
        cwd: Path,
        errlog: ServerLog,
        on_tools_changed: Callable[[], None],
    ) -> None:
        self.name = name
        self._on_tools_changed = on_tools_changed
        self.config = config
        self._cwd = cwd
        self._errlog = errlog
        self._client: Client | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._transport: StdioTransport | None = None

    async def open(self) -> list[ListedTool]:
        """The tools, listed within `startup_timeout`; on failure the server is closed."""
        ready: asyncio.Future[list[ListedTool]] = asyncio.get_running_loop().create_future()
        self._holder = asyncio.create_task(self._hold(ready), name=f"mcp-{self.name}")
        try:
            return await asyncio.wait_for(asyncio.shield(ready), self.config.startup_timeout)
        except BaseException:
            await self.close()
            raise

    async def _hold(self, ready: asyncio.Future[list[ListedTool]]) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                info = mcp_types.Implementation(name="nanohermes", version=__version__)
                client = Client(
                    self._transport_for(stack), client_info=info, message_handler=self._on_message
                )
                await stack.enter_async_context(client)
                tools = await _list_tools(client)
                self._client = client
                if not ready.done():
                    ready.set_result(tools)
                listener = asyncio.create_task(self._listen(client))
                try:
                    await self._stop.wait()
                finally:
                    listener.cancel()
                    await asyncio.wait({listener}, timeout=CLOSE_SECONDS)
        except BaseException as err:
            if not ready.done():
                failure = self._failure()
                leaf = ServerGone(failure) if failure else _leaf(err) if isinstance(err, Exception) else None
                ready.set_exception(leaf or ServerGone("cancelled"))
            if not isinstance(err, Exception):
                raise
        finally:
            self._client = None

    def _transport_for(self, stack: contextlib.AsyncExitStack) -> Any:
        config = self.config
        if config.url is not None:
            http = httpx2.AsyncClient(
                headers=dict(config.headers),
                timeout=httpx2.Timeout(30.0, read=max(300.0, config.tool_timeout + 5)),
            )
            stack.push_async_callback(http.aclose)
            return streamable_http_client(config.url, http_client=http)
        cwd = self._cwd if config.cwd is None else self._cwd / config.cwd  # an absolute cwd stays
        if not cwd.is_dir():  # else the spawn's error names the directory as a missing command
            raise ConfigError(f"its working directory {cwd} is not a directory", "fix its cwd")
        params = StdioServerParameters(
            command=str(config.command),
            args=list(config.args),
            env=dict(config.env) or None,
            cwd=cwd,
            encoding_error_handler="replace",  # "strict" ends the reader at a stray byte: every reply lost
        )
        self._transport = StdioTransport(params, self._errlog)
        return self._transport.streams()

    async def _listen(self, client: Client) -> None:
        """Servers on protocol 2026-07-28 announce a changed tool list on a `subscriptions/listen`
        stream (older ones send `notifications/tools/list_changed`: `_on_message`)."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self._on_tools_changed()
        except (ListenNotSupportedError, SubscriptionLost, MCPError, *_CONNECTION_ENDED):
            return  # an older protocol (`_on_message` hears it), a server without it, or the end

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._on_tools_changed()

    def _failure(self) -> str | None:
        """Why the transport ended the connection itself (a line over its limit)."""
        return None if self._transport is None else self._transport.failure

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        with self._one_line_errors() as client:
            result = await client.call_tool(tool, arguments)
        return result.model_dump(by_alias=True, mode="json")

    async def list_tools(self) -> list[ListedTool]:
        with self._one_line_errors() as client:
            return await _list_tools(client)

    @contextlib.contextmanager
    def _one_line_errors(self) -> Iterator[Client]:
        if self._client is None:
            raise ServerGone("not connected")
        try:
            yield self._client
        except MCPError as err:
            if connection_closed(err):
                raise ServerGone(self._failure() or "the server exited or closed the connection") from None
            raise CallFailed(err.message) from None
        except ValidationError as err:  # a reply the SDK refuses (content not a list, an unknown part type)
            raise CallFailed(invalid_reply(err)) from None
        except (httpx2.TransportError, OSError) as err:
            raise ServerGone(describe_error(err)) from None

    async def close(self) -> None:
        """Leave the client; bounded, never raises."""
        self._stop.set()
        holder = self._holder
        if holder is None or holder.done():
            return
        if self._client is None:  # still starting: stop at once
            holder.cancel()
        done, _ = await asyncio.wait({holder}, timeout=CLOSE_SECONDS)
        if not done:
            holder.cancel()
            await asyncio.wait({holder}, timeout=CLOSE_SECONDS)


def connection_closed(err: MCPError) -> bool:
    """Not a server's error answer with the same code (-32000: many send it for a failed call)."""
    return err.code == mcp_types.CONNECTION_CLOSED and err.message == CLOSED_MESSAGE and err.data is None


def invalid_reply(err: ValidationError) -> str:
    """Where and what (pydantic's own text is a dozen lines, one per branch of every union it tried)."""
    problems = err.errors(include_url=False)
    if not problems:
        return f"the server sent an invalid {err.title}"
    loc, message = list(problems[0]["loc"]), str(problems[0]["msg"])
    union = next((i for i, part in enumerate(loc) if isinstance(part, str) and part[:1].isupper()), None)
    if union is not None:  # pydantic tried each member of a union (`TextContent`, …): none matched
        loc, message = loc[:union], "matches none of the kinds MCP allows there"
    more = len({tuple(problem["loc"][: len(loc)]) for problem in problems}) - 1
    where = ".".join(str(part) for part in loc) or "the reply"
    tail = f" (and {more} more problems)" if more > 0 else ""
    return f"the server sent an invalid {err.title}: {where}: {message}{tail}"


async def _list_tools(client: Client) -> list[ListedTool]:
    tools: list[ListedTool] = []
    cursor: str | None = None
    for _ in range(LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            hint = tool.annotations.read_only_hint if tool.annotations else None
            tools.append(ListedTool(tool.name, tool.description or "", dict(tool.input_schema), hint is True))
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _leaf(err: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups: anyio task groups wrap everything."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return err


def describe_error(err: BaseException) -> str:
    err = _leaf(err)
    if isinstance(err, NanoHermesError):
        return err.one_line()
    if isinstance(err, FileNotFoundError):
        return f"command not found: {err.filename or err}"
    if isinstance(err, PermissionError):
        return f"permission denied: {err.filename or err}"
    if isinstance(err, TimeoutError):
        return "timed out"
    if isinstance(err, MCPError):
        if connection_closed(err):
            return "the server closed the connection (it exited)"
        return err.message
    if isinstance(err, ValidationError):
        return invalid_reply(err)
    if isinstance(err, httpx2.ConnectError):
        return f"cannot connect: {err}"
    if isinstance(err, httpx2.HTTPStatusError):
        return f"HTTP {err.response.status_code} from {err.request.url}"
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
