"""The SDK's `stdio_client` for MCP servers on POSIX, with bounds where it has none.
- stdout lines are read in linear time, each at most MAX_LINE_BYTES (the SDK's cost a minute of CPU
  and 500 MB for a 100 MB line). A reply over the limit or not parseable is answered in the server's
  place with an error (else its request would wait for its timeout); an escaped lone surrogate
  becomes U+FFFD; any other line over the limit ends the connection.
- stderr goes to the server's capped log; once the server stops its process group is killed.
On Windows the SDK's own transport runs (it kills the server's process tree with a Job Object)."""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from nanohermes.core.errors import JSON_ERRORS
from nanohermes.core.types import with_valid_text
from nanohermes.mcp.logs import ServerLog

MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line read from a server's stdout (a reply with a big file in it fits easily)."""
HEAD_BYTES = 300  # what is kept of a line over the limit: enough for the `id` of the reply it starts
READ_BYTES = 65536
EXIT_SECONDS = 2.0  # the SDK's grace periods: to exit once stdin closes, then after SIGTERM
FLUSH_SECONDS = 0.5  # for accepted messages to reach stdin, and stderr its end after the exit
_PIPE_ENDED = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_REPLY_HEAD = re.compile(
    r'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")\s*,\s*"(?:result|error)"'
)
"""The start of a reply as servers write it, for a line that is not JSON as a whole."""


class StdioTransport:
    def __init__(self, params: StdioServerParameters, errlog: ServerLog) -> None:
        self._params = params
        self._errlog = errlog
        self.failure: str | None = None  # why the transport ended the connection itself

    @contextlib.asynccontextmanager
    async def streams(self) -> AsyncIterator[tuple[Any, Any]]:
        """The (read, write) streams of a running server; leaving stops it."""
        if sys.platform == "win32":  # pragma: no cover
            async with stdio_client(self._params, errlog=self._errlog) as pair:  # type: ignore[arg-type]
                yield pair
            return
        params = self._params
        process = await anyio.open_process(
            [params.command, *params.args],
            env=get_default_environment() | (params.env or {}),
            stderr=subprocess.PIPE,
            cwd=params.cwd,
            start_new_session=True,
        )
        # No awaits until the task group is entered: a cancellation in the gap would leak the server.
        read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
        writer_done, stderr_done = anyio.Event(), anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(self._read_stdout, process, read_writer)
            group.start_soon(self._write_stdin, process, write_reader, read_writer, writer_done)
            group.start_soon(self._drain_stderr, process, stderr_done)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True):  # every wait inside is bounded
                    read_stream.close()  # the reader drains: a server stuck writing can read its stdin
                    write_stream.close()
                    with anyio.move_on_after(FLUSH_SECONDS):
                        await writer_done.wait()
                    await _stop(process)
                    with anyio.move_on_after(FLUSH_SECONDS):  # its last words, unless a child holds stderr
                        await stderr_done.wait()
                    await _close_all(process.stdout, process.stderr, read_writer, write_reader)
                    _close_subprocess_transport(process)
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(process.pid, signal.SIGKILL)  # what the server left behind
                group.cancel_scope.cancel()

    async def _read_stdout(self, process: Process, sink: Any) -> None:
        assert process.stdout is not None
        stdout = BufferedByteReceiveStream(process.stdout)
        try:
            async with sink:
                while True:
                    item: SessionMessage | Exception | None
                    try:
                        item = self._item(await stdout.receive_until(b"\n", MAX_LINE_BYTES + 1))
                    except anyio.DelimiterNotFound:
                        item = self._overlong(stdout.buffer[:HEAD_BYTES])
                        if item is not None:
                            await _skip_line(stdout)
                    if item is None:
                        return
                    await sink.send(item)
        except (*_PIPE_ENDED, anyio.IncompleteRead):
            pass  # the server closed stdout, or the session (or our shutdown) ended
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(*_PIPE_ENDED):
                while True:  # a server blocked writing stdout could not exit
                    await process.stdout.receive(READ_BYTES)

    def _item(self, line: bytes) -> SessionMessage | Exception:
        text = line.decode(self._params.encoding, self._params.encoding_error_handler)
        try:
            return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False))
        except ValidationError as err:
            return repaired(text, err)

    def _overlong(self, head: bytes) -> SessionMessage | None:
        """What the session reads for a line over the limit; None: the connection ends (`failure`)."""
        limit = f"the {MAX_LINE_BYTES / 1024 / 1024:g} MiB line limit"
        request_id = reply_id(head.decode(self._params.encoding, "replace"))
        if request_id is None:
            self.failure = f"the server wrote a line over {limit} to stdout"
            return None
        return _error_reply(request_id, mcp_types.INTERNAL_ERROR, f"the server sent a reply over {limit}")

    async def _write_stdin(self, process: Process, source: Any, reader_end: Any, done: anyio.Event) -> None:
        assert process.stdin is not None
        params = self._params
        try:
            async with source:
                async for message in source:
                    json = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(json.encode(params.encoding, params.encoding_error_handler))
        except _PIPE_ENDED:
            await reader_end.aclose()  # the session sees the end instead of a request waiting forever
        finally:
            done.set()

    async def _drain_stderr(self, process: Process, done: anyio.Event) -> None:
        assert process.stderr is not None
        decoder = codecs.getincrementaldecoder(self._params.encoding)("replace")
        try:
            while True:
                self._errlog.write(decoder.decode(await process.stderr.receive(READ_BYTES)))
        except _PIPE_ENDED:
            pass
        finally:
            done.set()


async def _skip_line(stdout: BufferedByteReceiveStream) -> None:
    while True:
        await stdout.receive(MAX_LINE_BYTES + 1)  # what receive_until held when it gave up
        with contextlib.suppress(anyio.DelimiterNotFound):
            await stdout.receive_until(b"\n", MAX_LINE_BYTES + 1)
            return


async def _stop(process: Process) -> None:
    """The SDK's shutdown: stdin closed, a grace period, then SIGTERM to the group, 2 s, SIGKILL."""
    if process.stdin is not None:
        with contextlib.suppress(*_PIPE_ENDED):
            await process.stdin.aclose()
    if not await _exited(process, EXIT_SECONDS):
        await terminate_posix_process_tree(process, EXIT_SECONDS)
        await _exited(process, EXIT_SECONDS)


async def _exited(process: Process, timeout: float) -> bool:
    """Whether the server exited within `timeout` (not `wait()`: it also waits for the pipes to close,
    which a child that inherited them may hold open)."""
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(0.01)
        return True
    return False


async def _close_all(*streams: Any) -> None:
    """A pipe a kill survivor still holds too: the tasks reading it end."""
    for stream in streams:
        if stream is not None:
            with contextlib.suppress(*_PIPE_ENDED):
                await stream.aclose()


def _close_subprocess_transport(process: Process) -> None:
    """Close asyncio's transport of the process (it warns at exit while a child holds a pipe open)."""
    with contextlib.suppress(AttributeError, PermissionError):  # not on asyncio: no such transport
        process._process._transport.close()  # type: ignore[attr-defined]


def repaired(line: str, err: ValidationError) -> SessionMessage | Exception:
    """What the session reads for a line the SDK's parser refused with `err`."""
    problems = err.errors(include_url=False)
    if not problems or problems[0]["type"] != "json_invalid":
        return err  # JSON, but not a message: the SDK ignores it
    if _ESCAPED_SURROGATE.search(line):
        with contextlib.suppress(*JSON_ERRORS):  # not (only) a surrogate
            value = with_valid_text(json.loads(line))
            return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_python(value, by_name=False))
    request_id = reply_id(line)
    if request_id is None:
        return err
    reason = str(problems[0]["msg"]).removeprefix("Invalid JSON: ")
    message = f"the server sent a reply that is not valid JSON ({reason})"
    return _error_reply(request_id, mcp_types.PARSE_ERROR, message)


def reply_id(line: str) -> int | str | None:
    """The `id` of the reply on a line the SDK could not parse, or None when it is no reply."""
    try:
        value = json.loads(line)
    except JSON_ERRORS:  # deeper than Python's parser too, or not JSON: its first bytes tell
        head = _REPLY_HEAD.match(line[:HEAD_BYTES])
        return None if head is None else json.loads(head.group(1))
    if not isinstance(value, dict) or "method" in value or not ("result" in value or "error" in value):
        return None
    found = value.get("id")
    return found if isinstance(found, int | str) and not isinstance(found, bool) else None


def _error_reply(request_id: int | str, code: int, message: str) -> SessionMessage:
    error = mcp_types.ErrorData(code=code, message=message)
    return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
