"""Making a blocking HTTP request interruptible from another thread (Ctrl-C → CancelToken).

- Before the status line: `send` runs on a daemon thread while the caller waits on "done or
  cancelled", so cancelling does not wait for a server still processing a long prompt. A response
  that arrives after cancellation is closed, so no connection leaks.
- While reading: `abort_response` shuts the socket down, which wakes a `recv` blocked in the reading
  thread at once (closing the file descriptor alone does not, on Linux).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from concurrent.futures import CancelledError, Future, InvalidStateError

import httpx

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import Cancelled


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


def send_cancellable(
    http: httpx.Client, request: httpx.Request, cancel: CancelToken, limit: float
) -> httpx.Response:
    """`http.send(request, stream=True)`; raises Cancelled as soon as `cancel` fires."""
    outcome: Future[httpx.Response] = Future()
    threading.Thread(target=_send, args=(http, request, outcome), name="nanohermes-send", daemon=True).start()

    def abandon() -> None:
        outcome.cancel()  # wakes the wait below

    unregister = cancel.on_cancel(abandon)
    try:
        outcome.exception(limit)  # waits; the send's own error is raised below
    except (CancelledError, TimeoutError):
        pass
    finally:
        unregister()
    if not outcome.cancel() and not cancel.cancelled:  # cancel() fails once there is an outcome
        return outcome.result()
    if not outcome.cancelled() and outcome.exception() is None:  # it came, but too late
        outcome.result().close()
    if cancel.cancelled:
        raise Cancelled()
    raise httpx.ReadTimeout("no answer within the total deadline", request=request)


def _send(http: httpx.Client, request: httpx.Request, outcome: Future[httpx.Response]) -> None:
    try:
        response = http.send(request, stream=True)
    except BaseException as err:  # handed to the waiting thread, which re-raises it
        with contextlib.suppress(InvalidStateError):  # nobody waits for it any more
            outcome.set_exception(err)
        return
    try:
        outcome.set_result(response)
    except InvalidStateError:  # abandoned (cancelled, or past the deadline): no connection leaks
        response.close()
