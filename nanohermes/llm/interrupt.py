"""Making a blocking HTTP request interruptible from another thread (Ctrl-C → CancelToken).

- Before the status line: `send` runs on a reusable daemon worker thread while the caller waits on
  "done or cancelled", so cancelling does not wait for a server still processing a long prompt. A
  response that arrives after cancellation is closed by the worker, so no connection leaks.
- While reading: `abort_response` shuts the socket down, which wakes a `recv` blocked in the reading
  thread at once (closing the file descriptor alone does not, on Linux).
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
from collections.abc import Callable

import httpx

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import Cancelled

_STOP = None


def abort_response(response: httpx.Response) -> None:
    """Called from the cancelling thread. The reading thread then sees the cancellation and closes
    the response itself."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # already closed by the server or the reader
            sock.shutdown(socket.SHUT_RDWR)
        return
    response.close()  # not a socket (a mock transport): closing is all there is


class SendWorkers:
    """Daemon threads, started on demand and reused, that run `send` for cancellable requests."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads = 0

    def send(
        self, http: httpx.Client, request: httpx.Request, cancel: CancelToken, limit: float
    ) -> httpx.Response:
        """`http.send(request, stream=True)`; raises Cancelled as soon as `cancel` fires."""
        job = _Send(http, request)
        unregister = cancel.on_cancel(job.done.set)
        try:
            self._submit(job.run)
            job.done.wait(limit)
        finally:
            unregister()
        return job.outcome(cancel)

    def close(self) -> None:
        with self._lock:
            count, self._threads, self._idle = self._threads, 0, 0
        for _ in range(count):
            self._jobs.put(_STOP)

    def _submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            start = self._idle == 0
            if start:
                self._threads += 1
            else:
                self._idle -= 1
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._loop, name="nanohermes-send", daemon=True).start()

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _STOP:
                return
            job()
            with self._lock:
                self._idle += 1


class _Send:
    def __init__(self, http: httpx.Client, request: httpx.Request) -> None:
        self._http = http
        self._request = request
        self.done = threading.Event()
        self._lock = threading.Lock()
        self._abandoned = False
        self._response: httpx.Response | None = None
        self._error: BaseException | None = None

    def run(self) -> None:
        try:
            response = self._http.send(self._request, stream=True)
        except BaseException as err:  # handed to the waiting thread, which re-raises it
            with self._lock:
                self._error = err
        else:
            with self._lock:
                if self._abandoned:
                    response.close()
                else:
                    self._response = response
        self.done.set()

    def outcome(self, cancel: CancelToken) -> httpx.Response:
        with self._lock:
            if cancel.cancelled or (self._response is None and self._error is None):
                self._abandoned = True
                if self._response is not None:
                    self._response.close()
                if cancel.cancelled:
                    raise Cancelled()
                raise httpx.ReadTimeout("no answer within the total deadline", request=self._request)
            if self._error is not None:
                raise self._error
            assert self._response is not None
            return self._response
