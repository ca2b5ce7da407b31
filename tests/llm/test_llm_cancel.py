"""Ctrl-C (a CancelToken set from another thread) ends a backoff wait, a send or a stream at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from llm_helpers import Recorder, cancel_soon_after, consume, make_client, sse_lines

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import Cancelled
from nanohermes.core.events import Retrying, TextDelta
from nanohermes.llm.client import real_sleep

LIMIT = 5.0  # generous bound for a slow shared CI machine; the waits below are 60 s


def _busy(status: int = 503, wait: str = "60") -> httpx.Response:
    return httpx.Response(status, json={"error": {"message": "busy"}}, headers={"Retry-After": wait})


def test_cancel_during_a_real_backoff_wait_ends_it_at_once() -> None:
    cancel = CancelToken()
    recorder = Recorder(_busy(), _busy())
    client = make_client(recorder, sleep=real_sleep)
    seen: list[object] = []
    started = time.monotonic()
    react = cancel_soon_after(Retrying, cancel)
    with pytest.raises(Cancelled):
        consume(client.stream([{"role": "user", "content": "hi"}], cancel=cancel), seen, react)
    assert time.monotonic() - started < LIMIT
    assert seen == [Retrying(1, 60.0, "HTTP 503")]
    assert len(recorder.requests) == 1, "no request after the cancelled wait"


def test_cancel_during_backoff_of_complete() -> None:
    cancel = CancelToken()
    threading.Timer(0.1, cancel.cancel).start()
    client = make_client(Recorder(_busy(429)), sleep=real_sleep)
    started = time.monotonic()
    with pytest.raises(Cancelled):
        client.complete([{"role": "user", "content": "hi"}], cancel=cancel)
    assert time.monotonic() - started < LIMIT


def test_injected_sleep_reporting_cancel_stops_retrying() -> None:
    cancel = CancelToken()

    def sleep(seconds: float, token: CancelToken | None) -> bool:
        assert token is cancel
        cancel.cancel()
        return True

    recorder = Recorder(_busy(), _busy())
    with pytest.raises(Cancelled):
        list(make_client(recorder, sleep=sleep).stream([{"role": "user", "content": "x"}], cancel=cancel))
    assert len(recorder.requests) == 1


def test_already_cancelled_sends_nothing() -> None:
    cancel = CancelToken()
    cancel.cancel()
    recorder = Recorder()
    with pytest.raises(Cancelled):
        list(make_client(recorder).stream([{"role": "user", "content": "x"}], cancel=cancel))
    assert recorder.requests == []


def test_cancel_while_waiting_for_the_status_line() -> None:
    release = threading.Event()

    def stalled(request: httpx.Request) -> httpx.Response:
        release.wait(LIMIT * 2)
        return httpx.Response(200, text="data: [DONE]\n\n", headers={"content-type": "text/event-stream"})

    cancel = CancelToken()
    threading.Timer(0.1, cancel.cancel).start()
    started = time.monotonic()
    try:
        with pytest.raises(Cancelled):
            list(make_client(Recorder(stalled)).stream([{"role": "user", "content": "x"}], cancel=cancel))
        assert time.monotonic() - started < LIMIT
    finally:
        release.set()


def test_cancel_mid_stream_stops_reading() -> None:
    produced: list[int] = []

    def chunks() -> Iterator[bytes]:
        for n in range(500):
            produced.append(n)
            time.sleep(0.005)
            yield sse_lines([{"choices": [{"index": 0, "delta": {"content": f"w{n} "}}]}]).encode()

    recorder = Recorder(httpx.Response(200, content=chunks(), headers={"content-type": "text/event-stream"}))
    cancel = CancelToken()
    seen: list[object] = []

    def react(item: object) -> None:
        if len(seen) == 3:
            cancel.cancel()

    with pytest.raises(Cancelled):
        consume(make_client(recorder).stream([{"role": "user", "content": "x"}], cancel=cancel), seen, react)
    assert seen == [TextDelta("w0 "), TextDelta("w1 "), TextDelta("w2 ")]
    assert len(produced) < 10
    assert len(recorder.requests) == 1, "a cancelled stream is not retried"


def _cut_by_cancelling(cancel: CancelToken, first: bytes) -> Iterator[bytes]:
    """A body whose connection is cut, as aborting it from the cancelling thread cuts it."""
    yield first
    cancel.cancel()
    raise httpx.ReadError("connection aborted")


def test_a_body_cut_by_cancelling_is_a_cancel_not_a_cut_answer() -> None:
    """Reading a whole (JSON) answer: a read that fails because Ctrl-C aborted it raises Cancelled,
    not IncompleteStream ("the answer was cut off"), and is not retried."""
    cancel = CancelToken()
    body = _cut_by_cancelling(cancel, b'{"choices": [')
    recorder = Recorder(httpx.Response(200, content=body, headers={"content-type": "application/json"}))
    with pytest.raises(Cancelled):
        make_client(recorder).complete([{"role": "user", "content": "x"}], cancel=cancel)
    assert len(recorder.requests) == 1


def test_a_stream_cut_by_cancelling_is_a_cancel_not_a_retry() -> None:
    cancel = CancelToken()
    first = sse_lines([{"choices": [{"index": 0, "delta": {"content": "w0 "}}]}]).encode()
    recorder = Recorder(
        httpx.Response(
            200, content=_cut_by_cancelling(cancel, first), headers={"content-type": "text/event-stream"}
        )
    )
    seen: list[object] = []
    stream = make_client(recorder).stream([{"role": "user", "content": "x"}], cancel=cancel)
    with pytest.raises(Cancelled):
        consume(stream, seen, lambda _: None)
    assert seen == [TextDelta("w0 ")]
    assert len(recorder.requests) == 1, "a cancelled stream is not retried without streaming"


def test_ctrl_c_while_an_error_body_trickles_in_is_a_cancel() -> None:
    """Reading an error's body is bounded like an answer's: Ctrl-C ends it with Cancelled."""
    cancel = CancelToken()

    def trickle() -> Iterator[bytes]:
        yield b'{"error": {"message": "bad'
        cancel.cancel()
        while True:
            yield b" "

    recorder = Recorder(httpx.Response(400, content=trickle(), headers={"content-type": "application/json"}))
    with pytest.raises(Cancelled):
        make_client(recorder).complete([{"role": "user", "content": "x"}], cancel=cancel)
    assert len(recorder.requests) == 1
