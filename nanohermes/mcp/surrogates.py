"""Lone UTF-16 surrogates in what a server sends, made harmless (imported by `connection` only).

JSON may escape a lone surrogate (`"\\ud800"`: a server that cut a string between the two halves of
an emoji). The SDK's parser refuses the whole line, so the reply is lost and its request waits for its
timeout; Python's `json` accepts it, but the string cannot be encoded as UTF-8 later (the request to
the model, the session file). `SurrogateRepair` wraps a transport's read stream: such a line is parsed
again with every lone surrogate replaced by U+FFFD, and delivered.
"""

from __future__ import annotations

import json
import re
from typing import Any

import mcp_types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from nanohermes.errors import JSON_ERRORS
from nanohermes.types import with_valid_text

_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def repaired(item: object) -> object:
    """A stream item: a line the SDK could not parse only for a lone surrogate, as its message (with
    U+FFFD instead); anything else as it is."""
    if not isinstance(item, ValidationError):
        return item
    problems = item.errors(include_url=False)
    line = problems[0].get("input") if problems and problems[0]["type"] == "json_invalid" else None
    if not isinstance(line, str) or not _ESCAPED_SURROGATE.search(line):
        return item
    try:
        value = with_valid_text(json.loads(line))
        message = mcp_types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except JSON_ERRORS:  # not (only) a surrogate: the SDK's own error stands
        return item
    return SessionMessage(message)


class SurrogateRepair:
    """A transport's read stream, with `repaired` applied to what it yields."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __getattr__(self, name: str) -> Any:  # the rest of the stream's interface (`last_context`, …)
        return getattr(self._stream, name)

    async def __aenter__(self) -> SurrogateRepair:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        result: bool | None = await self._stream.__aexit__(*exc)
        return result

    def __aiter__(self) -> SurrogateRepair:
        return self

    async def __anext__(self) -> object:
        return repaired(await self._stream.__anext__())

    async def receive(self) -> object:
        return repaired(await self._stream.receive())
