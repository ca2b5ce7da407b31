"""A raw JSON-RPC MCP server (no SDK) that answers like a broken one: `hostile_server.py MODE`.

bad-content   tools/call answers `content: "text"` (not a list), then a text part beside an
              unknown part type; every later call is answered properly
bad-listing   tools/list names a tool whose inputSchema is `{"type": "string"}`
"""

from __future__ import annotations

import json
import sys
from typing import Any

MODE = sys.argv[1]
ECHO = {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
BROKEN_RESULTS: list[dict[str, Any]] = [
    {"content": "not a list"},
    {"content": [{"type": "text", "text": "kept?"}, {"type": "hologram", "data": "x"}]},
]


def reply(message_id: Any, result: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        info = {"name": "hostile", "version": "1"}
        return {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": info,
        }
    if method == "tools/list":
        listed = [{"name": "bad", "inputSchema": {"type": "string"}}] if MODE == "bad-listing" else [ECHO]
        return {"tools": listed}
    if method == "tools/call" and MODE == "bad-content" and BROKEN_RESULTS:
        return BROKEN_RESULTS.pop(0)
    if method == "tools/call":
        return {"content": [{"type": "text", "text": "echo: " + str(params["arguments"].get("text"))}]}
    return {}


for line in sys.stdin:
    message = json.loads(line)
    if "id" in message and "method" in message:
        reply(message["id"], answer(message["method"], message.get("params") or {}))
