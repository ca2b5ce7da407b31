"""A raw JSON-RPC MCP server (no SDK) that answers like a broken one: `hostile_server.py MODE`.

bad-content   tools/call answers `content: "text"` (not a list), then a text part beside an
              unknown part type; every later call is answered properly
bad-listing   tools/list names a tool whose inputSchema is `{"type": "string"}`
stray-bytes   writes a line of bytes that are not UTF-8 to stdout before each tools/call answer
surrogates    a lone UTF-16 surrogate (JSON-escaped) in the tool's description and in each result
oversized     lists `echo` with a 100,000-character description and `huge` with a 100 kB schema
server-error  answers the first tools/call with the JSON-RPC error -32000 (a server's own error code:
              the SDK's "connection closed" uses it too), then properly; its pid in each result
deep-reply    answers the first tools/call with a result nested 300 deep (past the SDK's parser),
              then properly
infinity      lists `echo` and `bounded`, whose schema says `"maximum": Infinity`
silent-error  answers every tools/call with `isError: true` and no content
huge-reply N  answers the first tools/call with one text of N characters (one line of N+ bytes), then
              properly
huge-line N   writes a line of N bytes that is no reply (no `id` in its head) before the first
              tools/call answer
stderr-flood N  writes N bytes of lines to stderr before each tools/call answer, then `flood done`; a
              call with text "crash" exits after the flood and the line `Error: last words`
flood-at-start N  writes N bytes of lines to stderr, then `Error: last words`, and exits at once
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

MODE = sys.argv[1]
SIZE = int(sys.argv[2]) if len(sys.argv) > 2 else 0
ECHO = {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
HALF_EMOJI = "\ud83d"
"""The first half of a surrogate pair alone: json.dumps writes it as the escape `\\ud83d`."""
HUGE_SCHEMA = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(5000)}}
BROKEN_RESULTS: list[dict[str, Any]] = [
    {"content": "not a list"},
    {"content": [{"type": "text", "text": "kept?"}, {"type": "hologram", "data": "x"}]},
]


def reply(message_id: Any, result: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()


def listing() -> list[dict[str, Any]]:
    if MODE == "bad-listing":
        return [{"name": "bad", "inputSchema": {"type": "string"}}]
    if MODE == "surrogates":
        return [{**ECHO, "description": f"Echo {HALF_EMOJI}"}]
    if MODE == "oversized":
        return [{**ECHO, "description": "d" * 100_000}, {"name": "huge", "inputSchema": HUGE_SCHEMA}]
    if MODE == "infinity":
        bounded = {"type": "object", "properties": {"n": {"type": "number", "maximum": float("inf")}}}
        return [ECHO, {"name": "bounded", "inputSchema": bounded}]
    return [ECHO]


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        info = {"name": "hostile", "version": "1"}
        return {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": info,
        }
    if method == "tools/list":
        return {"tools": listing()}
    if method == "tools/call" and MODE == "bad-content" and BROKEN_RESULTS:
        return BROKEN_RESULTS.pop(0)
    if method == "tools/call" and MODE == "silent-error":
        return {"content": [], "isError": True}
    if method == "tools/call" and MODE == "deep-reply" and BROKEN_RESULTS:
        BROKEN_RESULTS.clear()
        return {"content": [], "structuredContent": nested(300)}
    if method == "tools/call" and MODE == "huge-reply" and BROKEN_RESULTS:
        BROKEN_RESULTS.clear()
        return {"content": [{"type": "text", "text": "x" * SIZE}]}
    if method == "tools/call" and MODE == "huge-line" and BROKEN_RESULTS:
        BROKEN_RESULTS.clear()
        sys.stdout.write('{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "')
        sys.stdout.write("y" * SIZE + '"}}\n')
    if method == "tools/call" and MODE == "stderr-flood":
        flood(params["arguments"].get("text") == "crash")
    if method == "tools/call" and MODE == "stray-bytes":
        sys.stdout.buffer.write(b"\xff\xfe not UTF-8\n")
        sys.stdout.flush()
    if method == "tools/call":
        tail = HALF_EMOJI if MODE == "surrogates" else f" {os.getpid()}" if MODE == "server-error" else ""
        return {"content": [{"type": "text", "text": "echo: " + str(params["arguments"].get("text")) + tail}]}
    return {}


def flood(crash: bool) -> None:
    line = "noise " * 15 + "\n"
    for _ in range(SIZE // len(line)):
        sys.stderr.write(line)
    sys.stderr.write("Error: last words\n" if crash else "flood done\n")
    sys.stderr.flush()
    if crash:
        sys.exit(1)


if MODE == "flood-at-start":
    flood(crash=True)
for line in sys.stdin:
    message = json.loads(line)
    if MODE == "server-error" and message.get("method") == "tools/call" and BROKEN_RESULTS:
        BROKEN_RESULTS.clear()
        error = {"code": -32000, "message": "database is locked"}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}) + "\n")
        sys.stdout.flush()
    elif "id" in message and "method" in message:
        reply(message["id"], answer(message["method"], message.get("params") or {}))
