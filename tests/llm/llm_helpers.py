"""Shared helpers for the model-client tests: fixtures, a recording transport, a fake sleep and clock."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import httpx
import pytest

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import LLMError
from nanohermes.core.types import ChatResult
from nanohermes.llm import ChatClient

FIXTURES = Path(__file__).parent / "fixtures"
SSE = {"content-type": "text/event-stream"}
URL = "http://llm.test/v1/chat/completions"


def fixture_bytes(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def sse_response(body: bytes | str, status: int = 200) -> httpx.Response:
    data = body.encode() if isinstance(body, str) else body
    return httpx.Response(status, content=data, headers=SSE)


def sse_lines(chunks: Iterable[dict[str, Any] | str]) -> str:
    """Build an SSE body: dicts become `data: {json}` events, strings are sent as given."""
    parts = [f"data: {json.dumps(c)}\n\n" if isinstance(c, dict) else c for c in chunks]
    return "".join(parts)


def completion(
    content: str = "", tool_calls: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}], **extra}


class FakeSleep:
    """Records every backoff wait instead of sleeping; returns the token's state like the real one."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float, cancel: CancelToken | None) -> bool:
        self.waits.append(seconds)
        return cancel.cancelled if cancel is not None else False


class FakeClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class Recorder:
    """An httpx.MockTransport handler that answers from a script and records request bodies."""

    def __init__(self, *responses: httpx.Response | Callable[[httpx.Request], httpx.Response]) -> None:
        self._script = list(responses)
        self.requests: list[httpx.Request] = []

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.requests]

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if not self._script:
            raise AssertionError(f"unexpected request #{len(self.requests)}")
        item = self._script.pop(0)
        return item(request) if callable(item) else item


def make_client(handler: Callable[[httpx.Request], httpx.Response], **options: Any) -> ChatClient:
    options.setdefault("sleep", FakeSleep())
    options.setdefault("random", lambda: 0.5)
    return ChatClient(
        base_url="http://llm.test/v1",
        model="test-model",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
        **options,
    )


def stream_error(client: ChatClient) -> LLMError:
    """The error `stream` raises for one user message; the client is closed after."""
    try:
        with pytest.raises(LLMError) as caught:
            list(client.stream([{"role": "user", "content": "hi"}]))
    finally:
        client.close()
    return caught.value


def run_stream(client: ChatClient, **kwargs: Any) -> tuple[list[Any], ChatResult]:
    """Drain `stream`; return the items before the result, and the result (checked to be last)."""
    messages = kwargs.pop("messages", [{"role": "user", "content": "hi"}])
    items = list(client.stream(messages, **kwargs))
    result = items[-1]
    assert isinstance(result, ChatResult)
    assert not any(isinstance(item, ChatResult) for item in items[:-1])
    return items[:-1], result


def consume(stream: Iterable[object], seen: list[object], react: Callable[[object], None]) -> None:
    """Iterate `stream`, recording each item and calling `react` on it (e.g. to cancel mid-way)."""
    for item in stream:
        seen.append(item)
        react(item)


def cancel_soon_after(kind: type, cancel: CancelToken, delay: float = 0.1) -> Callable[[object], None]:
    """A `consume` reaction: on an item of `kind`, cancel `delay` s later from a timer thread (like
    Ctrl-C arriving while the client blocks in the next wait or read)."""

    def react(item: object) -> None:
        if isinstance(item, kind):
            threading.Timer(delay, cancel.cancel).start()

    return react
