"""A small web site on a loopback socket for the web_fetch tests (tests/ is on sys.path).

    from page_server import PageServer, page_server as page_server

    page_server.url("/page")   # http://127.0.0.1:PORT/page

Routes: /page (HTML), /text (text/plain), /binary (text/plain holding NUL bytes), /png (image/png),
/loop (redirects to itself for ever), /to-text (redirects to /text), /to-loopback (redirects to
http://127.0.0.1:PORT/text), /to-file (redirects to a file:// URL), /huge (50 MB of text, streamed),
/stall (headers, then nothing for 30 s), /missing (404).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

PAGE = (
    "<html><head><title>Release notes</title><style>p {color: red}</style>"
    "<script>alert('x')</script></head><body><h1>Version 2</h1>"
    "<p>Adds <b>session search</b> and <a href='/text'>more</a>.</p></body></html>"
)
HUGE_BYTES = 50 * 1024 * 1024


class PageServer:
    def __init__(self) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - silence stderr logging
        return

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        try:
            self._route()
        except (BrokenPipeError, ConnectionResetError):
            return  # the client stopped reading (a cap): fine

    def _route(self) -> None:
        loopback = f"http://127.0.0.1:{self.server.server_address[1]}/text"
        redirects = {
            "/loop": "/loop",
            "/to-text": "/text",
            "/to-file": "file:///etc/passwd",
            "/to-loopback": loopback,
        }
        bodies = {
            "/page": ("text/html; charset=utf-8", PAGE.encode()),
            "/text": ("text/plain", b"plain words\n"),
            "/binary": ("text/plain", b"\x00\x01\x02binary\x00" * 100),
            "/png": ("image/png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100),
        }
        if self.path in redirects:
            self.send_response(302)
            self.send_header("Location", redirects[self.path])
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path in bodies:
            kind, data = bodies[self.path]
            self._send(200, kind, data)
        elif self.path == "/huge":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(HUGE_BYTES))
            self.end_headers()
            line = b"x" * 1023 + b"\n"
            for _ in range(HUGE_BYTES // len(line)):
                self.wfile.write(line)
        elif self.path == "/stall":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.flush()
            time.sleep(30)
        else:
            self._send(404, "text/plain", b"no such page")

    def _send(self, status: int, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def page_server() -> Iterator[PageServer]:
    server = PageServer()
    yield server
    server.close()
