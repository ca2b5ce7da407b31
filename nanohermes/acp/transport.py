"""stdio for the ACP server: newline-delimited JSON-RPC that answers bad input instead of dropping it.

The SDK's framing skips a line that is not JSON and trips on some values (a list id, a string error, a
huge array); here those get a JSON-RPC error or are mended first. While the client does not read our
output, its input is not read either."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import re
import stat
import sys
import threading
import time
from typing import Any, BinaryIO, cast

from nanohermes.core.errors import JSON_ERRORS, json_problem
from nanohermes.core.types import with_valid_text

LINE_LIMIT = 50 * 1024 * 1024  # the longest message read (an embedded file in a prompt can be large)
FLUSH_SECONDS = 10.0  # how long the client may take to read the replies still buffered at exit
NOTIFICATIONS = {"session/cancel"}  # others (extensions' `_…` too) are logged and dropped
MAX_ARRAY_ITEMS = 10_000
"""An array in a request's params longer than this is refused before the SDK validates it: pydantic
builds one error per wrong item (a million wrong prompt blocks took 1.2 GB); no real request comes near."""
ARRAY_CHECK_NODES = 100_000  # values of a request's params looked at for such an array
ERROR_DATA_CHARS = 4096  # of an error reply's `data` (as JSON): a client's 40 MB param is not echoed
ECHO_CHARS = 200  # of a wrong value an invalid-params error quotes back (pydantic's `input`)
ERROR_ENTRIES = 10  # validation errors one reply lists (a million wrong blocks have one each)
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")  # the only way in: the bytes are strict UTF-8

log = logging.getLogger("nanohermes.acp")


def error_reply(code: int, message: str, request_id: Any, details: str) -> dict[str, Any]:
    error = {"code": code, "message": message, "data": {"details": details}}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


class InputReader(asyncio.StreamReader):
    """Tells when its input has ended, while lines before the end are unread."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit=limit)
        self.ended = asyncio.Event()

    def feed_eof(self) -> None:
        super().feed_eof()
        self.ended.set()


class LineTransport:
    """An `acp` Transport over asyncio byte streams (one JSON message per line)."""

    def __init__(
        self, reader: InputReader, writer: asyncio.StreamWriter, source: asyncio.BaseTransport | None = None
    ) -> None:
        self._reader, self._writer = reader, writer
        self._source = source  # the pipe `reader` is fed from (None: a reader thread feeds it)
        self.unanswered = 0  # requests read with no reply sent yet

    def end_input(self) -> None:
        """SIGTERM: what was read already is still handled, then the server ends as at end of input."""
        if self._source is not None:
            self._source.close()  # no more data reaches the reader
        self._reader.feed_eof()

    async def send(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            self.unanswered -= 1
        await self._write(message)

    async def _write(self, message: dict[str, Any]) -> None:
        # written at once, with no sender task: each hop through the loop waits for the GIL while a turn runs
        error = message.get("error")
        if isinstance(error, dict) and error.get("data") is not None:
            message = {**message, "error": {**error, "data": bounded_data(error["data"])}}
        self._writer.write((json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8"))
        await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        """The next well-formed message (bad lines are answered here); None at the end."""
        while await self._writable():
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as err:
                line = err.partial
                if not line.strip():
                    return None
            except asyncio.LimitOverrunError as err:
                await self._skip_long_line(err.consumed)
                continue
            if line.strip() and (message := await self._parse(line)) is not None:
                return message
        return None

    async def _writable(self) -> bool:
        """Wait while the client reads none of our replies (they must not pile up); False: output gone."""
        await asyncio.sleep(0)  # the handlers of the messages read so far run (and write) first
        if self._writer.transport.get_write_buffer_size() and not self._reader.ended.is_set():
            drained = asyncio.ensure_future(self._writer.drain())
            ended = asyncio.ensure_future(self._reader.ended.wait())
            await asyncio.wait({drained, ended}, return_when=asyncio.FIRST_COMPLETED)
            ended.cancel()
            if not drained.done():
                drained.cancel()
            elif drained.exception() is not None:  # ConnectionResetError: the output is gone
                return False
        return not self._writer.transport.is_closing()

    async def _parse(self, line: bytes) -> dict[str, Any] | None:
        try:
            value = decode(line)
        except JSON_ERRORS as err:
            log.warning("malformed JSON from the client: %s", json_problem(err))
            await self._write(error_reply(-32700, "Parse error", None, json_problem(err)))
            return None
        problem = _invalid(value)
        is_reply = isinstance(value, dict) and "method" not in value and "id" in value
        if problem is not None and is_reply:
            log.warning("a reply from the client dropped: %s", problem)
        elif problem is not None:
            request_id = value.get("id") if isinstance(value, dict) and _valid_id(value.get("id")) else None
            await self._write(error_reply(-32600, "Invalid request", request_id, problem))
        elif is_reply:
            return _with_error_object(value)
        elif "id" not in value and value["method"] not in NOTIFICATIONS:
            log.info("notification %.100r ignored: not one nanohermes handles", value["method"])
        elif _oversized_array(value.get("params")):
            if "id" in value:
                too_long = f"an array of over {MAX_ARRAY_ITEMS:,} items"
                await self._write(error_reply(-32602, "Invalid params", value["id"], too_long))
        else:
            if "id" in value:  # a request, not a notification
                self.unanswered += 1
            return cast("dict[str, Any]", value)
        return None

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
        too_long = f"message over {LINE_LIMIT // (1024 * 1024)} MB"
        await self._write(error_reply(-32600, "Invalid request", None, too_long))

    async def close(self) -> None:
        """Write out what the pipe has not taken yet, for up to FLUSH_SECONDS."""
        transport = self._writer.transport
        deadline = time.monotonic() + FLUSH_SECONDS
        while (left := transport.get_write_buffer_size()) and not transport.is_closing():
            if time.monotonic() > deadline:
                log.warning("%d bytes of replies not written: the client stopped reading", left)
                return
            await asyncio.sleep(0.01)


def decode(text: bytes) -> Any:
    """NaN, Infinity and 1e400 (not writable back) raise ValueError; a lone surrogate becomes U+FFFD."""
    value = json.loads(text, parse_constant=_finite, parse_float=_finite)
    return with_valid_text(value) if SURROGATE_ESCAPE.search(text) else value


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text[:40]} is not a finite JSON number")
    return number


def _invalid(value: Any) -> str | None:
    if not isinstance(value, dict):
        return "batch requests are not supported" if isinstance(value, list) else "not a JSON object"
    if "method" in value and not isinstance(value["method"], str):
        return "method is not a string"
    if "method" not in value and "id" not in value:
        return "no method and no id"
    if "id" in value and not _valid_id(value["id"]):
        return "id is not a string, a number or null"
    return None


def _valid_id(request_id: Any) -> bool:
    # a list or object id cannot be looked up (the SDK's table of sent requests raises), and
    # true would match request 1
    number = isinstance(request_id, int | float) and not isinstance(request_id, bool)
    return request_id is None or number or isinstance(request_id, str)


def bounded_data(data: Any) -> Any:
    """An error reply's `data`, bounded: the SDK's invalid-params reply quotes each wrong value whole."""
    if isinstance(data, dict) and isinstance(data.get("errors"), list):
        errors = data["errors"]
        brief: list[Any] = [_brief(entry) for entry in errors[:ERROR_ENTRIES]]
        if len(errors) > ERROR_ENTRIES:
            brief.append(f"… and {len(errors) - ERROR_ENTRIES} more")
        data = {**data, "errors": brief}
    text = json.dumps(data, separators=(",", ":"), default=str)
    if len(text) <= ERROR_DATA_CHARS:
        return json.loads(text)  # what `default` made of a value JSON has no form for, as sent
    return {"details": text[:ERROR_DATA_CHARS] + f"… ({len(text):,} characters in all)"}


def _brief(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return entry
    entry = {key: value for key, value in entry.items() if key != "url"}
    value = entry.get("input")
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(text) > ECHO_CHARS:
        entry["input"] = text[:ECHO_CHARS] + f"… ({len(text):,} characters)"
    return entry


def _with_error_object(reply: dict[str, Any]) -> dict[str, Any]:
    """An error reply whose `error` is not an object still fails its request (the SDK `.get`s it)."""
    if "error" not in reply or isinstance(reply["error"], dict):
        return reply
    log.warning("a malformed error reply from the client: its error is not an object")
    return {**reply, "error": {"code": -32603, "message": "malformed error reply (not an object)"}}


def protocol_files() -> tuple[BinaryIO, BinaryIO]:
    """Duplicates of fds 0 and 1, which are then pointed elsewhere (a stray print cannot break JSON-RPC)."""
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
    """Pipes are read and written by the event loop; a file or /dev/null by a thread / blocking writes."""
    loop = asyncio.get_running_loop()
    reader = InputReader(limit=LINE_LIMIT)
    source: asyncio.BaseTransport | None = None
    if _pollable(proto_in):
        source, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), proto_in)
    else:
        threading.Thread(target=_feed, args=(loop, reader, proto_in), daemon=True).start()
    protocol = asyncio.streams.FlowControlMixin()
    transport: asyncio.WriteTransport
    if _pollable(proto_out):
        transport, _ = await loop.connect_write_pipe(lambda: protocol, proto_out)
    else:
        transport = _FileWriteTransport(proto_out)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return LineTransport(reader, writer, source)


def _oversized_array(value: Any) -> bool:
    pending, seen = [value], 0
    while pending and seen < ARRAY_CHECK_NODES:
        item = pending.pop()
        seen += 1
        if isinstance(item, list):
            if len(item) > MAX_ARRAY_ITEMS:
                return True
            pending.extend(item)
        elif isinstance(item, dict):
            pending.extend(item.values())
    return False


def _pollable(target: BinaryIO) -> bool:
    """A pipe, a socket or a terminal: `< /dev/null` passes asyncio's check but epoll refuses it."""
    number = target.fileno()
    mode = os.fstat(number).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(number)


def _feed(loop: asyncio.AbstractEventLoop, reader: InputReader, source: BinaryIO) -> None:
    try:
        while data := source.read(65536):
            loop.call_soon_threadsafe(_deliver, reader, data)
    finally:
        loop.call_soon_threadsafe(reader.feed_eof)


def _deliver(reader: InputReader, data: bytes) -> None:
    if not reader.ended.is_set():  # input ended early (SIGTERM): the rest is not read
        reader.feed_data(data)


class _FileWriteTransport(asyncio.WriteTransport):
    """Blocking writes to a regular file or a device (never full, so no flow control is needed)."""

    def __init__(self, target: BinaryIO) -> None:
        super().__init__()
        self._target = target

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._target.write(bytes(data))

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0
