"""stdio for the ACP server: newline-delimited JSON-RPC that answers bad input instead of dropping it.

The SDK's own framing logs and skips a line that is not JSON, and a JSON value that is not an object
ends its receive loop. Here such a line gets a JSON-RPC error (`-32700` parse error, `-32600`
invalid request) and the server keeps reading.

`protocol_stdio` keeps stdout for protocol messages only: the protocol gets private duplicates of
file descriptors 0 and 1; fd 1 then points at stderr and fd 0 at /dev/null, so a stray `print`, a
library's chatter or a child process can neither corrupt the stream nor eat the client's input.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import sys
import threading
from typing import Any, BinaryIO

LINE_LIMIT = 50 * 1024 * 1024
"""The longest message read (an embedded file in a prompt can be large)."""

log = logging.getLogger("nanohermes.acp")


def error_reply(code: int, message: str, request_id: Any = None, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


class LineTransport:
    """An `acp` Transport over asyncio byte streams (one JSON message per line)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._open_requests: set[str] = set()

    def unanswered(self) -> int:
        """How many requests read from the client have no reply sent yet."""
        return len(self._open_requests)

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message now (in call order: writes are never interleaved), then wait only if
        the client reads slower than we write. No sender task in between: each hop through the
        event loop is one more wait for the GIL while a turn's worker thread runs."""
        if "method" not in message and "id" in message:
            self._open_requests.discard(json.dumps(message["id"]))
        self._writer.write((json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8"))
        await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        """The next well-formed message; None at end of input. Bad lines are answered here."""
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as err:
                line = err.partial
                if not line.strip():
                    return None
            except asyncio.LimitOverrunError as err:
                await self._skip_long_line(err.consumed)
                continue
            message = await self._parse(line)
            if message is not None:
                return message

    async def _parse(self, line: bytes) -> dict[str, Any] | None:
        text = line.strip()
        if not text:
            return None
        try:
            value = json.loads(text)
        except ValueError as err:
            log.warning("malformed JSON from the client: %s", err)
            await self.send(error_reply(-32700, "Parse error", data={"details": str(err)}))
            return None
        if not isinstance(value, dict):
            kind = "batch requests are not supported" if isinstance(value, list) else "not a JSON object"
            await self.send(error_reply(-32600, "Invalid request", data={"details": kind}))
            return None
        method = value.get("method")
        if "method" in value and not isinstance(method, str):
            await self.send(
                error_reply(-32600, "Invalid request", value.get("id"), {"details": "method is not a string"})
            )
            return None
        if "method" not in value and "id" not in value:
            await self.send(error_reply(-32600, "Invalid request", data={"details": "no method and no id"}))
            return None
        if "method" in value and "id" in value:
            self._open_requests.add(json.dumps(value["id"]))
        return value

    async def _skip_long_line(self, consumed: int) -> None:
        await self._reader.readexactly(consumed)
        while True:
            try:
                await self._reader.readuntil(b"\n")
                break
            except asyncio.LimitOverrunError as err:
                await self._reader.readexactly(err.consumed)
            except asyncio.IncompleteReadError:
                break
        limit = LINE_LIMIT // (1024 * 1024)
        await self.send(error_reply(-32600, "Invalid request", data={"details": f"message over {limit} MB"}))

    async def close(self) -> None:
        """Nothing is queued: every message was written by `send`."""


def protocol_files() -> tuple[BinaryIO, BinaryIO]:
    """(input, output) for the protocol: duplicates of fds 0 and 1, which are then pointed elsewhere."""
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    sys.stdout.flush()
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    return proto_in, proto_out


async def open_transport(proto_in: BinaryIO, proto_out: BinaryIO) -> LineTransport:
    """Pipes (what editors give) are read and written by the event loop; a regular file (input
    redirected from a file, output to one) falls back to a reader thread / blocking writes."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    try:
        if not _pollable(proto_in):
            raise ValueError("not pollable")
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), proto_in)
    except ValueError:
        threading.Thread(target=_feed, args=(loop, reader, proto_in), daemon=True).start()
    protocol = asyncio.streams.FlowControlMixin()
    transport: asyncio.WriteTransport
    try:
        if not _pollable(proto_out):
            raise ValueError("not pollable")
        transport, _ = await loop.connect_write_pipe(lambda: protocol, proto_out)
    except ValueError:
        transport = _FileWriteTransport(proto_out)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return LineTransport(reader, writer)


def _pollable(target: BinaryIO) -> bool:
    """Whether the event loop can watch `target`: a pipe, a socket or a terminal. Other character
    devices (`< /dev/null`) pass asyncio's own check but epoll refuses them, and EOF never came."""
    number = target.fileno()
    mode = os.fstat(number).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(number)


def _feed(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, source: BinaryIO) -> None:
    try:
        while data := source.read(65536):
            loop.call_soon_threadsafe(reader.feed_data, data)
    finally:
        loop.call_soon_threadsafe(reader.feed_eof)


class _FileWriteTransport(asyncio.WriteTransport):
    """Blocking writes to a regular file (never full, so no flow control is needed)."""

    def __init__(self, target: BinaryIO) -> None:
        super().__init__()
        self._target = target
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._closing:
            self._target.write(bytes(data))

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True
