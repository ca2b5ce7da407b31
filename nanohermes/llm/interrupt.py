"""Making a blocking HTTP request interruptible from another thread (Ctrl-C → CancelToken): the send
runs on a daemon thread (a server may process a long prompt for minutes before its first byte), and
a read is woken by shutting the socket down (closing the descriptor alone does not, on Linux)."""

from __future__ import annotations

import contextlib
import socket
import threading
from concurrent.futures import CancelledError, Future, InvalidStateError

import httpx

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import Cancelled


def abort_response(response: httpx.Response) -> None:
    """Called from the cancelling thread; the reading thread then closes the response itself."""
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
        response = outcome.result(limit)
    except CancelledError:
        raise Cancelled() from None
    except TimeoutError:
        if outcome.cancel():  # still no answer (else the send itself timed out: raised below)
            raise httpx.ReadTimeout("no answer within the total deadline", request=request) from None
        response = outcome.result()
    finally:
        unregister()
    if cancel.cancelled:  # it came, but too late
        response.close()
        raise Cancelled()
    return response


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
