"""Lines a server sends that the SDK cannot parse, made harmless (imported by `connection` only).

The SDK drops a line it cannot parse, so a reply on such a line is lost and its request waits for its
timeout (a 60 s wait, then a misleading "timed out"). Two kinds are repaired here:

JSON may escape a lone surrogate (`"\\ud800"`: a server that cut a string between the two halves of
an emoji). The SDK's parser refuses the whole line, so the reply is lost and its request waits for its
timeout; Python's `json` accepts it, but the string cannot be encoded as UTF-8 later (the request to
the model, the session file). `SurrogateRepair` wraps a transport's read stream: such a line is parsed
again with every lone surrogate replaced by U+FFFD, and delivered.

Any other reply the SDK cannot parse (nested deeper than its parser allows, cut off, not JSON past
its first bytes) is answered at once, in the server's place, with a JSON-RPC error for the request it
answers (its `id`), saying why; a line without a reply's `id` (a server's stray log line) is left to
the SDK, which ignores it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import mcp_types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from nanohermes.core.errors import JSON_ERRORS
from nanohermes.core.types import with_valid_text

_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_REPLY_HEAD = re.compile(
    r'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")\s*,\s*"(?:result|error)"'
)
"""The start of a reply as servers write it (`{"jsonrpc": "2.0", "id": 7, "result": …`), for a line
that is not JSON as a whole."""


def repaired(item: object) -> object:
    """A stream item: a line the SDK could not parse only for a lone surrogate, as its message (with
    U+FFFD instead); another reply it could not parse, as an error answering that reply's request;
    anything else as it is."""
    if not isinstance(item, ValidationError):
        return item
    problems = item.errors(include_url=False)
    line = problems[0].get("input") if problems and problems[0]["type"] == "json_invalid" else None
    if not isinstance(line, str):
        return item
    if _ESCAPED_SURROGATE.search(line):
        try:
            value = with_valid_text(json.loads(line))
            return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_python(value, by_name=False))
        except JSON_ERRORS:  # not (only) a surrogate
            pass
    request_id = reply_id(line)
    if request_id is None:
        return item
    reason = str(problems[0]["msg"]).removeprefix("Invalid JSON: ")
    error = mcp_types.ErrorData(
        code=mcp_types.PARSE_ERROR, message=f"the server sent a reply that is not valid JSON ({reason})"
    )
    return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def reply_id(line: str) -> int | str | None:
    """The `id` of the reply on a line the SDK could not parse, or None (not a reply: a log line, a
    request or notification from the server)."""
    try:
        value = json.loads(line)
    except JSON_ERRORS:  # deeper than Python's parser too, or not JSON: its first bytes tell
        head = _REPLY_HEAD.match(line[:300])
        return None if head is None else json.loads(head.group(1))
    if not isinstance(value, dict) or "method" in value or not ("result" in value or "error" in value):
        return None
    found = value.get("id")
    return found if isinstance(found, int | str) and not isinstance(found, bool) else None


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
