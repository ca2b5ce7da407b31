"""Model-client benchmark: stream parsing throughput, and per-request overhead against raw httpx.

    .venv/bin/python bench/llm_bench.py [--chunks 10000] [--requests 300]

1. Events per second parsing a 10,000-chunk stream (text deltas, reasoning deltas and fragmented
   tool-call arguments), through the whole client (httpx line splitting, SSE reader, accumulator) via
   an in-memory transport, and through the SSE reader + assembler alone.
2. Per-request overhead on a local loopback server: the same tiny streamed answer fetched with a raw
   `httpx.Client.stream` + `iter_lines`, and with `ChatClient.stream` (without and with a CancelToken,
   which sends from a worker thread). Both are measured in this run; the ratio is printed.
Figures only, no assertions: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from nanohermes.core.cancel import CancelToken
from nanohermes.core.types import ChatResult
from nanohermes.llm import ChatClient
from nanohermes.llm.failures import Target
from nanohermes.llm.response import StreamAssembler
from nanohermes.llm.sse import DONE, iter_chunks

MESSAGES = [{"role": "user", "content": "hello"}]


def build_stream(chunks: int) -> bytes:
    """`chunks` events: 40% text, 20% reasoning, 40% tool-call argument fragments over 20 calls."""
    parts: list[str] = []
    per_call = max(1, int(chunks * 0.4) // 20)
    fragments = 0
    for n in range(chunks - 1):
        kind = n % 5
        if kind in (0, 1):
            delta: dict[str, Any] = {"content": f"word{n} "}
        elif kind == 2:
            delta = {"reasoning_content": f"thought{n} "}
        else:
            call = fragments // per_call
            if fragments % per_call == 0:
                entry: dict[str, Any] = {
                    "index": call,
                    "id": f"call_{call}",
                    "function": {"name": "t", "arguments": "{"},
                }
            else:
                entry = {"index": call, "function": {"arguments": f'"k{n}": {n}, '}}
            fragments += 1
            delta = {"tool_calls": [entry]}
        parts.append("data: " + json.dumps({"choices": [{"index": 0, "delta": delta}]}) + "\n\n")
    parts.append('data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n')
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def best_of(runs: int, action: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_parsing(chunks: int) -> None:
    body = build_stream(chunks)
    headers = {"content-type": "text/event-stream"}
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=body, headers=headers))
    client = ChatClient(base_url="http://bench/v1", model="m", http_client=httpx.Client(transport=transport))
    counted: list[int] = []

    def whole_client() -> None:
        items = list(client.stream(MESSAGES))
        assert isinstance(items[-1], ChatResult)
        counted.append(len(items))

    lines = body.decode().splitlines()

    def reader_only() -> None:
        assembler = StreamAssembler(Target("m", "u"))
        for chunk in iter_chunks(lines):
            if chunk != DONE:
                assembler.feed(chunk)
        assert assembler.result().finish_reason

    whole_client()
    full = best_of(5, whole_client)
    bare = best_of(5, reader_only)
    print(f"stream parsing: {chunks} chunks, {len(body) / 1e6:.1f} MB, {counted[-1] - 1} deltas yielded")
    rate_full, rate_bare = chunks / full, chunks / bare
    print(f"  whole client (httpx + SSE + accumulator): {rate_full:,.0f} chunks/s ({full * 1e3:.1f} ms)")
    print(f"  events yielded by the whole client:        {(counted[-1] - 1) / full:,.0f} deltas/s")
    print(f"  SSE reader + assembler alone:             {rate_bare:,.0f} chunks/s ({bare * 1e3:.1f} ms)")


ANSWER = (
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        head = f"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {len(ANSWER)}\r\n\r\n"
        self.wfile.write(head.encode() + ANSWER)  # one write: no Nagle/delayed-ACK stall in the figures


def start_server() -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"http://{host!s}:{port}/v1"


def bench_overhead(requests: int) -> None:
    server, base = start_server()
    http = httpx.Client()
    client = ChatClient(base_url=base, model="m", http_client=http)
    body = json.dumps({"model": "m", "messages": MESSAGES, "stream": True}).encode()

    def raw() -> None:
        with http.stream("POST", f"{base}/chat/completions", content=body) as response:
            for _ in response.iter_lines():
                pass

    def ours() -> None:
        for _ in client.stream(MESSAGES):
            pass

    def ours_cancellable() -> None:
        for _ in client.stream(MESSAGES, cancel=CancelToken()):
            pass

    actions = {"raw": raw, "ours": ours, "cancel": ours_cancellable}
    results: dict[str, list[float]] = {name: [] for name in actions}
    for action in actions.values():  # warm the connection pool and code paths
        for _ in range(20):
            action()
    rounds = 5
    for _ in range(rounds):  # interleaved rounds, so machine noise hits every variant alike
        for name, action in actions.items():
            start = time.perf_counter()
            for _ in range(requests // rounds):
                action()
            results[name].append(time.perf_counter() - start)
    done = requests // rounds * rounds
    per = {name: sum(times) / done * 1e6 for name, times in results.items()}
    spread = {name: statistics.pstdev(t) / statistics.mean(t) * 100 for name, t in results.items()}
    raw_us = per["raw"]
    print(f"per-request time on loopback ({done} requests each, keep-alive):")
    print(f"  raw httpx stream + iter_lines:      {raw_us:7.0f} µs  (±{spread['raw']:.0f}% between rounds)")
    for name, label in (
        ("ours", "ChatClient.stream:                 "),
        ("cancel", "ChatClient.stream with CancelToken:"),
    ):
        print(
            f"  {label} {per[name]:7.0f} µs  ratio {per[name] / raw_us:.2f}x  (+{per[name] - raw_us:.0f} µs)"
        )
    http.close()
    server.shutdown()
    server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    bench_parsing(args.chunks)
    bench_overhead(args.requests)


if __name__ == "__main__":
    main()
