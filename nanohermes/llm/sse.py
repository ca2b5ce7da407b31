"""Server-sent events: text lines in, JSON chunks out.

Tolerant of what servers really send: events not separated by blank lines (each line is then tried on
its own), error events (`event: error`, llama.cpp's `error:` line) as `{"error": …}` chunks, and a
last event without its blank line.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Iterable, Iterator
from typing import Any, Final, Literal

from nanohermes.core.errors import JSON_ERRORS, BadResponse
from nanohermes.core.types import shorten

DONE: Final = "[DONE]"  # what ends an OpenAI stream; `iter_chunks` yields it in place of a chunk
Chunk = dict[str, Any]

MAX_LINE_CHARS = 16 * 1024 * 1024  # a whole tool call with a big file in one event fits easily


def iter_lines(pieces: Iterable[str]) -> Iterator[str]:
    """Lines end only at CR LF, CR or LF (JSON may carry U+2028 and the like as text)."""
    newlines = io.IncrementalNewlineDecoder(None, translate=True)  # a CR LF split over pieces is one
    parts: list[str] = []
    size = 0
    for piece in itertools.chain(pieces, [None]):
        lines = newlines.decode(piece or "", final=piece is None).split("\n")
        for index, part in enumerate(lines):
            size += len(part)
            if size > MAX_LINE_CHARS:
                raise BadResponse(
                    f"the endpoint sent a stream line of over {MAX_LINE_CHARS // 2**20} MiB; reading stopped",
                    "check --base-url points at an OpenAI-compatible /v1 endpoint",
                )
            parts.append(part)
            if index < len(lines) - 1:  # a line break follows
                yield "".join(parts)
                parts, size = [], 0
    if size:
        yield "".join(parts)


def iter_sse_data(lines: Iterable[str]) -> Iterator[list[str]]:
    """The `data:` lines of each event; an error event comes out as `{"error": …}`."""
    data: list[str] = []
    event = ""
    for line in itertools.chain(lines, [""]):  # the last event may lack its blank line
        if not line:
            if data:
                yield [as_error(data)] if event == "error" else data
            data, event = [], ""
        elif line[0] != ":":  # `:` starts a comment (a keep-alive)
            field, sep, value = line.partition(":")
            value = value[1:] if sep and value[:1] == " " else value
            if field == "data":
                data.append(value)
            elif field == "event":
                event = value.strip()
            elif field == "error":  # llama.cpp's server: `error: {"code": 500, "message": …}`
                data.append(as_error([value]))
            # id:, retry: and unknown fields carry nothing we use


def as_error(data: list[str]) -> str:
    text = "\n".join(data).strip()
    try:
        value = json.loads(text)
    except JSON_ERRORS:  # not JSON: the text itself
        value = text
    return json.dumps({"error": value or "the server reported an error without details"})


def iter_chunks(lines: Iterable[str]) -> Iterator[Chunk | Literal["[DONE]"]]:
    for data in iter_sse_data(lines):
        joined = "\n".join(data)
        if not joined.strip():
            continue  # `data:` keep-alives without payload
        try:
            chunks = [_decode(joined)]
        except BadResponse:
            if len(data) == 1:
                raise
            chunks = [_decode(part) for part in data if part.strip()]  # events without blank lines
        yield from chunks


def _decode(payload: str) -> Chunk | Literal["[DONE]"]:
    text = payload.strip()
    return DONE if text == DONE else json_object(text, "a stream event from the endpoint")


def json_object(text: str, what: str) -> Chunk:
    hint = "check --base-url points at an OpenAI-compatible /v1 endpoint"
    try:
        value = json.loads(text)
    except JSON_ERRORS:
        raise BadResponse(f"{what} is not JSON: {shorten(text, 120)!r}", hint) from None
    if not isinstance(value, dict):
        raise BadResponse(
            f"{what} is not a chat completion (not a JSON object): {shorten(text, 120)!r}", hint
        )
    return value
