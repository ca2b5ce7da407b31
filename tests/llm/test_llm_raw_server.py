"""Hostile servers at the byte level (raw loopback sockets): line breaks, BOMs, endless bodies,
credentials in the base URL, and proxies from the environment."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from llm_helpers import run_stream

from nanohermes.core.errors import BadResponse, ConfigError, EndpointUnreachable, IncompleteStream, LLMError
from nanohermes.core.types import ChatResult
from nanohermes.llm import transport
from nanohermes.llm.client import ChatClient

Reply = Callable[[socket.socket], None]
SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return
        data += piece
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.lower().split(b"\r\n")
    length = next((int(line[15:]) for line in lines if line.startswith(b"content-length:")), 0)
    while len(rest) < length:
        rest += conn.recv(65536)


@pytest.fixture
def raw_server() -> Iterator[Callable[[Reply], str]]:
    """Serves each connection with the given reply (raw bytes on the socket); gives the base URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    replies: list[Reply] = []

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                _read_request(conn)
                replies[0](conn)
            except OSError:
                pass  # the client went away: what the test wants to see

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    accepting = threading.Thread(target=accept, daemon=True)
    accepting.start()

    def start(reply: Reply) -> str:
        replies.append(reply)
        return f"http://127.0.0.1:{listener.getsockname()[1]}/v1"

    yield start
    # close() alone leaves a thread blocked in accept() on a socket that keeps listening, whose
    # descriptor number the next sockets reuse: a later test's server once got this one's reply
    with contextlib.suppress(OSError):
        listener.shutdown(socket.SHUT_RDWR)  # wakes the accept
    accepting.join(timeout=5)
    listener.close()


def event(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"


def text(words: str, finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": words}, "finish_reason": finish}]}


def stream(base_url: str, **options: Any) -> ChatResult:
    client = ChatClient(base_url=base_url, model="m", max_retries=0, **options)
    try:
        return run_stream(client)[1]
    finally:
        client.close()


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_a_line_separator_inside_json_text_does_not_split_the_event(
    raw_server: Callable[[Reply], str], separator: str
) -> None:
    """llama.cpp and vLLM write non-ASCII text unescaped; JSON allows these three raw in a string."""
    answer = f"one{separator}two"
    url = raw_server(lambda conn: conn.sendall(SSE_HEAD + event(text(answer, "stop")) + b"data: [DONE]\n\n"))
    assert stream(url).content == answer


def test_a_byte_order_mark_does_not_lose_the_first_event(raw_server: Callable[[Reply], str]) -> None:
    body = b"\xef\xbb\xbf" + event(text("Hello ")) + event(text("world", "stop")) + b"data: [DONE]\n\n"
    url = raw_server(lambda conn: conn.sendall(SSE_HEAD + body))
    assert stream(url).content == "Hello world"


def test_a_json_answer_with_a_byte_order_mark_is_read(raw_server: Callable[[Reply], str]) -> None:
    answer = {"choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop"}]}
    body = b"\xef\xbb\xbf" + json.dumps(answer).encode()
    head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    url = raw_server(lambda conn: conn.sendall(head.encode() + body))
    client = ChatClient(base_url=url, model="m", max_retries=0)
    try:
        assert client.complete([{"role": "user", "content": "hi"}]).content == "hi"
    finally:
        client.close()


def test_a_line_over_16_mib_is_refused_not_buffered(raw_server: Callable[[Reply], str]) -> None:
    huge = event(text("a" * (17 * 1024 * 1024), "stop"))
    url = raw_server(lambda conn: conn.sendall(SSE_HEAD + huge + b"data: [DONE]\n\n"))
    with pytest.raises(BadResponse, match="stream line of over 16 MiB"):
        stream(url)


def test_an_endless_fast_stream_stops_at_the_size_limit(
    raw_server: Callable[[Reply], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transport, "ANSWER_LIMIT", 1024 * 1024)
    block = event(text("x" * 1000)) * 100

    def endless(conn: socket.socket) -> None:
        conn.sendall(SSE_HEAD)
        while True:  # until the client hangs up
            conn.sendall(block)

    with pytest.raises(IncompleteStream, match="is over 1 MiB; reading stopped"):
        stream(raw_server(endless), total_timeout=60.0)  # the deadline only guards against a hang


def test_a_password_in_the_base_url_never_shows_in_an_error(raw_server: Callable[[Reply], str]) -> None:
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    with pytest.raises(EndpointUnreachable) as unreachable:
        stream(f"http://alice:hunter2secret@127.0.0.1:{port}/v1")
    assert f"cannot reach http://127.0.0.1:{port}/v1/chat/completions" in str(unreachable.value)

    body = b'{"error": {"message": "user alice with password hunter2secret may not use m"}}'
    head = f"HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    url = raw_server(lambda conn: conn.sendall(head.encode() + body))
    with pytest.raises(LLMError) as refused:
        stream(url.replace("http://", "http://alice:hunter2secret@"))
    for err in (unreachable.value, refused.value):
        assert "hunter2secret" not in f"{err} {err.hint}"


@pytest.fixture
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (*PROXY_VARIABLES, "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize("proxy", ["socks5://127.0.0.1:1080", "foo://bar", "http://[::1"])
def test_a_proxy_httpx_cannot_use_is_a_config_error_naming_it(
    no_proxy_env: pytest.MonkeyPatch, proxy: str
) -> None:
    no_proxy_env.setenv("HTTPS_PROXY", proxy)
    with pytest.raises(ConfigError, match="cannot use the proxy in HTTPS_PROXY") as raised:
        ChatClient(base_url="https://api.example/v1", model="m")
    assert "HTTPS_PROXY" in raised.value.hint


def test_an_unreachable_proxy_is_named_with_its_password_hidden(no_proxy_env: pytest.MonkeyPatch) -> None:
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    no_proxy_env.setenv("HTTP_PROXY", f"http://bob:proxysecret1@127.0.0.1:{port}")
    with pytest.raises(EndpointUnreachable) as raised:
        stream("http://api.example/v1")
    message = f"{raised.value} {raised.value.hint}"
    assert f"through the proxy in HTTP_PROXY (http://127.0.0.1:{port})" in message
    assert "check the proxy" in message
    assert "proxysecret1" not in message


def test_the_proxy_named_is_the_one_httpx_cannot_use(no_proxy_env: pytest.MonkeyPatch) -> None:
    """httpx reads every proxy variable at once: the first one set was named, though fine."""
    no_proxy_env.setenv("HTTPS_PROXY", "http://good.example:8080")
    no_proxy_env.setenv("HTTP_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(ConfigError, match=r"cannot use the proxy in HTTP_PROXY \(socks5://") as raised:
        ChatClient(base_url="https://api.example/v1", model="m")
    assert "pip install 'httpx[socks]'" in raised.value.hint


def test_an_endpoint_in_no_proxy_is_not_said_to_go_through_the_proxy(
    no_proxy_env: pytest.MonkeyPatch,
) -> None:
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    no_proxy_env.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    no_proxy_env.setenv("NO_PROXY", "localhost,127.0.0.1")
    with pytest.raises(EndpointUnreachable) as raised:
        stream(f"http://127.0.0.1:{port}/v1")
    assert "proxy" not in f"{raised.value} {raised.value.hint}"
