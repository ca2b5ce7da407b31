"""A tiny SSE server on a real loopback socket (http.server in a thread), for the streaming path."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Script:
    """One answer: status, headers, body pieces sent with `delay` between them, then an optional hold
    (the connection stays open, silent, until the server is released or `hold` seconds pass)."""

    pieces: list[bytes]
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    delay: float = 0.0
    hold: float = 0.0
    keep_alive: bool = False
    """Send a content-length and keep the connection open for the next request."""


class LoopbackServer:
    def __init__(self) -> None:
        self.scripts: list[Script] = []
        self.bodies: list[dict[str, Any]] = []
        self.release = threading.Event()
        self.disconnected = threading.Event()
        self.connections = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def setup(self) -> None:
                owner.connections += 1
                super().setup()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                owner.bodies.append(json.loads(self.rfile.read(length)))
                script = owner.scripts.pop(0)
                self.send_response(script.status)
                for key, value in script.headers.items():
                    self.send_header(key, value)
                if script.keep_alive:
                    self.send_header("content-length", str(sum(len(p) for p in script.pieces)))
                else:
                    self.send_header("connection", "close")
                self.end_headers()
                try:
                    for piece in script.pieces:
                        self.wfile.write(piece)
                        self.wfile.flush()
                        if script.delay:
                            time.sleep(script.delay)
                    if script.hold:
                        owner.release.wait(script.hold)
                        self.wfile.write(b": still here\n\n")
                        self.wfile.flush()
                except OSError:
                    owner.disconnected.set()
                self.close_connection = not script.keep_alive

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def sse_pieces(chunks: list[dict[str, Any]], done: bool = True) -> list[bytes]:
    pieces = [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks]
    return [*pieces, b"data: [DONE]\n\n"] if done else pieces


def text_chunks(words: list[str], finish: str | None = "stop") -> list[dict[str, Any]]:
    chunks: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}]} for w in words
    ]
    if finish:
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return chunks
