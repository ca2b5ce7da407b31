"""A fake OpenAI-compatible endpoint on a real loopback socket, for end-to-end tests.

    from fake_server import FakeServer, fake_server as fake_server   # tests/ is on sys.path

    def test_x(fake_server: FakeServer) -> None:
        fake_server.push_text("Hello!")                           # next reply: plain text
        fake_server.push_tool_calls([("read_file", {"path": "a.txt"})])
        fake_server.push_status(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "0"})
        fake_server.push_sse(['data: {"choices": []}', "data: [DONE]"], delay=0.05)  # raw SSE lines
        fake_server.push_text("[]", match="JSON array")          # only for a request containing this
        ...  # point the client at fake_server.url (".../v1") and run
        fake_server.bodies                                        # every request body, in arrival order
        fake_server.wait_for_requests(3, timeout=5)               # e.g. background distillation
        fake_server.send_usage = False                            # like llama-cpp-python: no usage

`POST /v1/chat/completions` answers from a queue. A reply is streamed as SSE when the request says
`"stream": true` and returned as one JSON chat completion otherwise (raw SSE and status replies are
sent as given). Choosing a reply: the first queued reply whose `match` substring occurs in the
request body's JSON text; else the first queued reply without `match`; else `default_text` (settable)
as a plain text reply, so a background distillation call never hangs. `delay` is slept before each
SSE chunk (slow streams, cancellation tests) and once before a non-streamed JSON reply (a slow
distillation); a client that hangs up mid-stream is fine.

Run standalone for manual checks: `python tests/fake_server.py "reply text"` prints the base URL.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

CallSpec = tuple[str, dict[str, Any] | str] | dict[str, Any]


@dataclass
class Reply:
    """One scripted response. `kind` is "text", "tools", "sse" or "status"."""

    kind: str
    text: str = ""
    reasoning: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    usage: dict[str, int] = field(
        default_factory=lambda: {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    )
    match: str | None = None


@dataclass(frozen=True)
class Recorded:
    """One request as received (header names lower-cased)."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeServer:
    """The server object; see the module docstring. Thread-safe."""

    def __init__(self, default_text: str = "OK") -> None:
        self.default_text = default_text
        self.send_usage = True
        """False: replies carry no `usage` at all (llama-cpp-python when streaming)."""
        self.requests: list[Recorded] = []
        self._queue: list[Reply] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        handler = type("_Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """Base URL to give as `base_url` (ends in /v1)."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests]

    # -- scripting -------------------------------------------------------------------------------

    def push(self, reply: Reply) -> None:
        with self._lock:
            self._queue.append(reply)

    def push_text(
        self, text: str, *, reasoning: str = "", delay: float = 0.0, match: str | None = None
    ) -> None:
        self.push(Reply("text", text=text, reasoning=reasoning, delay=delay, match=match))

    def push_tool_calls(
        self, calls: list[CallSpec], *, text: str = "", delay: float = 0.0, match: str | None = None
    ) -> None:
        """`calls`: (name, arguments) pairs (arguments as dict or raw JSON text) or full call dicts
        ({"id", "function": {"name", "arguments"}}). Ids default to call_1, call_2, …"""
        built = [_call_dict(spec, n) for n, spec in enumerate(calls, start=1)]
        self.push(Reply("tools", text=text, calls=built, delay=delay, match=match))

    def push_sse(
        self, chunks: list[str | dict[str, Any]], *, delay: float = 0.0, match: str | None = None
    ) -> None:
        """Raw SSE: a dict is sent as `data: <json>`, a string as the line(s) given; each chunk is
        followed by a blank line. Nothing is added (no [DONE] unless you include it)."""
        lines = [f"data: {json.dumps(c)}" if isinstance(c, dict) else c for c in chunks]
        self.push(Reply("sse", chunks=lines, delay=delay, match=match))

    def push_status(
        self,
        status: int,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        match: str | None = None,
    ) -> None:
        """An HTTP status with a JSON body (dict/list) or a text body (str)."""
        self.push(Reply("status", status=status, body=body, headers=dict(headers or {}), match=match))

    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Block until at least `count` requests arrived; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._arrived.wait(left)
        return True

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # -- used by the handler ---------------------------------------------------------------------

    def _take(self, recorded: Recorded) -> Reply:
        text = json.dumps(recorded.body, ensure_ascii=False)
        with self._arrived:
            self.requests.append(recorded)
            self._arrived.notify_all()
            for matching in (True, False):
                for index, reply in enumerate(self._queue):
                    if (reply.match is not None and reply.match in text) if matching else reply.match is None:
                        return self._queue.pop(index)
            return Reply("text", text=self.default_text)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr logging
        return

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send_json(400, {"error": {"message": "request body is not JSON"}})
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = self.fake._take(Recorded(self.path, headers, body))
        if not self.fake.send_usage:
            reply.usage = {}
        stream = bool(body.get("stream"))
        model = str(body.get("model") or "fake")
        try:
            self._answer(reply, stream, model)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client hung up (cancellation): fine

    def _answer(self, reply: Reply, stream: bool, model: str) -> None:
        if reply.kind == "status":
            self._send_status(reply)
        elif reply.kind == "sse":
            self._send_sse(reply.chunks, reply.delay)
        elif stream:
            lines = [f"data: {json.dumps(c)}" for c in _stream_chunks(reply, model)]
            self._send_sse([*lines, "data: [DONE]"], reply.delay)
        else:
            if reply.delay:
                time.sleep(reply.delay)
            self._send_json(200, _completion(reply, model))

    def _send_status(self, reply: Reply) -> None:
        if isinstance(reply.body, str):
            data, ctype = reply.body.encode(), "text/plain"
        else:
            data, ctype = (
                json.dumps(reply.body if reply.body is not None else {}).encode(),
                "application/json",
            )
        self.send_response(reply.status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_sse(self, lines: list[str], delay: float) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for line in lines:
            if delay:
                time.sleep(delay)
            self.wfile.write(line.encode() + b"\n\n")
            self.wfile.flush()


def _call_dict(spec: CallSpec, number: int) -> dict[str, Any]:
    if isinstance(spec, dict):
        return spec
    name, arguments = spec
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": f"call_{number}", "type": "function", "function": {"name": name, "arguments": args}}


def _completion(reply: Reply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.calls:
        message["tool_calls"] = reply.calls
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if reply.calls else "stop"}
        ],
        **({"usage": reply.usage} if reply.usage else {}),
    }


def _stream_chunks(reply: Reply, model: str) -> Iterator[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model, "choices": [choice]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(reply.reasoning):
        yield chunk({"reasoning_content": piece})
    for piece in _pieces(reply.text):
        yield chunk({"content": piece})
    for index, call in enumerate(reply.calls):
        function = call.get("function", {})
        head = {"index": index, "id": call.get("id"), "type": "function"}
        args = str(function.get("arguments", ""))
        yield chunk({"tool_calls": [{**head, "function": {"name": function.get("name"), "arguments": ""}}]})
        for piece in _pieces(args):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if reply.calls else "stop")
    if not reply.usage:
        return
    yield {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "model": model,
        "choices": [],
        "usage": reply.usage,
    }


def _pieces(text: str, size: int = 8) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    """A started FakeServer, closed after the test."""
    server = FakeServer()
    try:
        yield server
    finally:
        server.close()


if __name__ == "__main__":
    standalone = FakeServer(default_text=" ".join(sys.argv[1:]) or "OK")
    print(standalone.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        standalone.close()
