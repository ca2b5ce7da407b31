"""The streaming path over a real loopback socket (http.server in a thread), not a mock transport."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import pytest
from llm_helpers import FakeSleep, cancel_soon_after, consume, run_stream
from llm_loopback import LoopbackServer, Script, sse_pieces, text_chunks

from nanohermes.config.settings import load_settings
from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import Cancelled, EndpointUnreachable
from nanohermes.core.events import Retrying, TextDelta
from nanohermes.core.types import ChatResult
from nanohermes.llm import ChatClient


def _client(server: LoopbackServer) -> ChatClient:
    settings = load_settings(
        {"model": "loop-model", "base_url": server.base_url, "api_key": "sk-loop"}, environ={}
    )
    return ChatClient.from_settings(settings)


def test_streams_text_and_a_fragmented_call_over_real_sockets() -> None:
    call_chunks: list[dict[str, Any]] = [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_r",
                                "type": "function",
                                "function": {"name": "read_file", "arguments": '{"pa'},
                            }
                        ]
                    },
                }
            ]
        },
        {
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": 'th": "x"}'}}]}}
            ]
        },
        {
            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11},
        },
    ]
    pieces = sse_pieces(text_chunks(["Hel", "lo"], finish=None) + call_chunks)
    # split one event across two TCP writes, and add a keep-alive comment
    pieces = [b": keep-alive\n\n", pieces[0][:9], pieces[0][9:], *pieces[1:]]
    with LoopbackServer() as server:
        server.scripts.append(Script(pieces, delay=0.01))
        client = _client(server)
        try:
            items = list(client.stream([{"role": "user", "content": "hi"}], tools=[{"type": "function"}]))
        finally:
            client.close()
    result = items[-1]
    assert isinstance(result, ChatResult)
    assert [i.text for i in items if isinstance(i, TextDelta)] == ["Hel", "lo"]
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("call_r", "read_file", '{"path": "x"}')
    ]
    assert result.usage.total_tokens == 11
    body = server.bodies[0]
    assert body["model"] == "loop-model"
    assert body["stream"] is True


def test_cancel_during_a_silent_stream_returns_at_once() -> None:
    pieces = sse_pieces(text_chunks(["first"], finish=None), done=False)
    with LoopbackServer() as server:
        server.scripts.append(Script(pieces, hold=20.0))
        client = _client(server)
        cancel = CancelToken()
        seen: list[object] = []
        started = time.monotonic()
        react = cancel_soon_after(TextDelta, cancel)
        with pytest.raises(Cancelled):
            consume(client.stream([{"role": "user", "content": "hi"}], cancel=cancel), seen, react)
        elapsed = time.monotonic() - started
        client.close()
    assert seen == [TextDelta("first")]
    assert elapsed < 5.0, f"cancel took {elapsed:.1f}s; the server held the stream for 20s"


def test_cancel_while_the_server_has_not_answered_yet() -> None:
    with LoopbackServer() as server:
        # the server sends no status line until released: like a local model processing a long prompt
        server.scripts.append(Script([], hold=20.0))
        client = _client(server)
        cancel = CancelToken()
        threading.Timer(0.2, cancel.cancel).start()
        started = time.monotonic()
        with pytest.raises(Cancelled):
            list(client.stream([{"role": "user", "content": "hi"}], cancel=cancel))
        assert time.monotonic() - started < 5.0
        client.close()


def test_unreachable_endpoint_names_the_url_and_the_flag() -> None:
    with LoopbackServer() as server:
        url = server.base_url
    sleep = FakeSleep()
    client = ChatClient(base_url=url, model="m", max_retries=1, sleep=sleep, random=lambda: 0.0)
    events: list[object] = []
    with pytest.raises(EndpointUnreachable) as caught:
        events.extend(client.stream([{"role": "user", "content": "hi"}]))
    client.close()
    assert f"cannot reach {url}/chat/completions" in str(caught.value)
    assert "--base-url" in caught.value.hint
    assert sleep.waits == [0.5]
    assert isinstance(events[0], Retrying)


def test_injected_http_client_is_used_and_left_open() -> None:
    with LoopbackServer() as server:
        server.scripts.append(Script(sse_pieces(text_chunks(["a"]))))
        http = httpx.Client(headers={"x-trace": "1"})
        client = ChatClient(base_url=server.base_url, model="m", http_client=http)
        result = client.complete([{"role": "user", "content": "hi"}])
        client.close()
        assert not http.is_closed
        http.close()
    assert result.content == "a"
    assert json.dumps(server.bodies[0]).count('"stream": false') == 1


def _send_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name == "nanohermes-send")


def test_connection_is_reused_after_done_and_send_threads_do_not_pile_up() -> None:
    before = _send_threads()
    messages = [{"role": "user", "content": "q"}]
    with LoopbackServer() as server:
        for word in ("one", "two", "three", "four"):
            server.scripts.append(Script(sse_pieces(text_chunks([word])), keep_alive=True))
        client = _client(server)
        answers = [client.complete(messages, cancel=CancelToken()).content]
        answers += [run_stream(client, messages=messages, cancel=CancelToken())[1].content for _ in range(2)]
        answers.append(run_stream(client, messages=messages)[1].content)
        assert _send_threads() - before <= 1, "a send thread ends with its request"
        client.close()
        connections = server.connections
    assert answers == ["one", "two", "three", "four"]
    assert connections == 1, "reading past [DONE] returns the connection to the pool"
