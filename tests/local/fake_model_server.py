"""A stand-in for `python -m llama_cpp.server`, started by the tests exactly as nanohermes starts the
real one: `python fake_model_server.py --port N --pidfile F [--mode M] [--grandchild F2]`.

Modes: `ok` answers GET /v1/models (and POST /v1/chat/completions with "pong"); `die` prints an
error and exits 3 at once; `hang` listens but never answers 200; `taken` prints uvicorn's "address
already in use" line and exits 1. `--flood MB` first prints that many MB of noise.
"""

from __future__ import annotations

import argparse
import http.server
import json
import subprocess
import sys
from pathlib import Path


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        mode = self.server.mode  # type: ignore[attr-defined]
        status = 200 if mode == "ok" and self.path == "/v1/models" else 503
        body = b'{"object": "list", "data": [{"id": "fake"}]}' if status == 200 else b"{}"
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        """`/v1/chat/completions`: one JSON completion saying "pong" (also when asked to stream)."""
        self.rfile.read(int(self.headers.get("content-length") or 0))
        message = {"role": "assistant", "content": "pong"}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        body = json.dumps({"id": "fake", "object": "chat.completion", "choices": [choice]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        print("fake:", format % args, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pidfile", type=Path, required=True)
    parser.add_argument("--mode", default="ok", choices=("ok", "die", "hang", "taken"))
    parser.add_argument("--grandchild", type=Path)
    parser.add_argument("--flood", type=int, default=0)
    args = parser.parse_args()
    for _ in range(args.flood * 1024):
        sys.stdout.buffer.write(b"noise " * 170 + b"\n")
    sys.stdout.flush()
    args.pidfile.write_text(str(__import__("os").getpid()))
    if args.grandchild is not None:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        args.grandchild.write_text(str(child.pid))
    if args.mode == "die":
        print("fake: loading model", flush=True)
        print("fake: error: bad magic in model file", flush=True)
        return 3
    if args.mode == "taken":
        print(
            f"ERROR: [Errno 98] error while attempting to bind on address ('127.0.0.1', {args.port}): "
            "address already in use",
            flush=True,
        )
        return 1
    server = http.server.HTTPServer(("127.0.0.1", args.port), _Handler)
    server.mode = args.mode  # type: ignore[attr-defined]
    print(f"fake: listening on {args.port}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
