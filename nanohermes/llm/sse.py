"""Server-sent events: text lines in, JSON chunks out.

Tolerant of what OpenAI-compatible servers really send: `:` comment lines (keep-alives), `data:` with
or without a space, data split over several `data:` lines (joined with newlines), events not separated
by blank lines (each line is then tried on its own), `event:`/`id:`/`retry:` fields (ignored), and a
last event that is not followed by a blank line.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Iterator
from typing import Any, Final, Literal

from nanohermes.errors import BadResponse
from nanohermes.llm.failures import one_line


class Marker(enum.Enum):
    DONE = "[DONE]"
    """The `[DONE]` line that ends an OpenAI stream."""


DONE: Final = Marker.DONE
Chunk = dict[str, Any]


def iter_sse_data(lines: Iterable[str]) -> Iterator[list[str]]:
    """Yield the `data:` lines of each event (one list per event, never empty)."""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield data
                data = []
            continue
        if line[0] == ":":
            continue
        field, sep, value = line.partition(":")
        if field != "data":
            continue  # event:, id:, retry: and unknown fields carry nothing we use
        if sep and value[:1] == " ":
            value = value[1:]
        data.append(value.rstrip("\r"))
    if data:
        yield data


def iter_chunks(lines: Iterable[str]) -> Iterator[Chunk | Literal[Marker.DONE]]:
    """Yield each event's JSON object, or DONE for `[DONE]`. Raises BadResponse for non-JSON data."""
    for data in iter_sse_data(lines):
        if len(data) == 1:
            if data[0].strip():
                yield _decode(data[0])
            continue
        joined = "\n".join(data)
        if not joined.strip():
            continue  # `data:` keep-alives without payload
        try:
            yield _decode(joined)
        except BadResponse:
            # No blank lines between events: every data line is its own chunk.
            for part in data:
                if part.strip():
                    yield _decode(part)


def _decode(payload: str) -> Chunk | Literal[Marker.DONE]:
    text = payload.strip()
    if text == "[DONE]":
        return DONE
    try:
        value = json.loads(text)
    except ValueError:
        raise BadResponse(
            f"the endpoint sent a stream event that is not JSON: {one_line(text, 120)}",
            "check --base-url points at an OpenAI-compatible /v1 endpoint",
        ) from None
    if not isinstance(value, dict):
        raise BadResponse(
            f"the endpoint sent a stream event that is not a JSON object: {one_line(text, 120)}"
        )
    return value
