"""The HTTP side of the client: the httpx client and proxy, a cancellable send, reading a body.

Ctrl-C ends a send or a read at once: the send runs on a daemon thread (a server may read a long prompt
for minutes before its first byte), and a read is woken by shutting the socket down (closing the
descriptor alone does not, on Linux).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import urllib.parse
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future, InvalidStateError

import httpx

from nanohermes.core.cancel import CancelToken, result_of
from nanohermes.core.errors import Cancelled, ConfigError, IncompleteStream, NanoHermesError
from nanohermes.core.events import StreamItem
from nanohermes.core.types import shorten
from nanohermes.llm.failures import ONE_LINE, strip_userinfo
from nanohermes.llm.response import StreamAssembler
from nanohermes.llm.sse import DONE, iter_chunks, iter_lines

ERROR_BODY_LIMIT = 64 * 1024  # enough for any provider's error JSON
ANSWER_LIMIT = 128 * 1024 * 1024
"""Characters of an answer read at most (a 128k-token answer streamed token by token is ~40 MB): a
server that streams without end must not fill the memory before the total deadline."""
_CUT = (httpx.HTTPError, httpx.StreamError, OSError, ValueError)
_UNUSABLE = (ValueError, ImportError, httpx.InvalidURL)
_PROXY_VARIABLES = {
    "https": ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"),
    "http": ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"),
}


def new_http_client(base_url: str) -> httpx.Client:
    """A client for `base_url`. A plain-http endpoint (a local server) never speaks TLS — redirects are
    not followed — so the CA bundle is not loaded for it: that costs tens of milliseconds per start."""
    try:
        return httpx.Client(verify=not base_url.lower().startswith("http://"))
    except _UNUSABLE as err:
        names = dict.fromkeys(name for names in _PROXY_VARIABLES.values() for name in names)
        broken = next((name for name in names if os.environ.get(name) and not _usable(os.environ[name])), "")
        value = strip_userinfo(os.environ[broken])[0] if broken else ""
        where = broken or "the proxy settings"
        socks = " (a SOCKS proxy needs `pip install 'httpx[socks]'`)" if "socks" in value.lower() else ""
        raise ConfigError(
            f"cannot use the proxy in {where}{f' ({value})' if value else ''}: {shorten(str(err), 200)}",
            f"fix or unset {where}{socks}",
        ) from None


def _usable(proxy: str) -> bool:
    try:
        httpx.Client(proxy=proxy, trust_env=False).close()
    except _UNUSABLE:
        return False
    return True


def proxy_for(url: str) -> str:
    """`NAME (proxy URL)` of the environment proxy that a request to `url` goes through, or ""."""
    parts = urllib.parse.urlsplit(url)
    variables = _PROXY_VARIABLES.get(parts.scheme.lower(), ())
    name = next((name for name in variables if os.environ.get(name)), None)
    if name is None:
        return ""
    from urllib.request import proxy_bypass  # only here: an unreachable endpoint

    if proxy_bypass(parts.hostname or ""):  # NO_PROXY (or the system setting), as urllib reads it
        return ""
    return f"{name} ({strip_userinfo(os.environ[name])[0]})"


def send_cancellable(http: httpx.Client, request: httpx.Request, cancel: CancelToken) -> httpx.Response:
    """`http.send(request, stream=True)`; raises Cancelled as soon as `cancel` fires."""
    outcome: Future[httpx.Response] = Future()
    threading.Thread(target=_send, args=(http, request, outcome), name="nanohermes-send", daemon=True).start()
    response = result_of(outcome, cancel)
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
    except InvalidStateError:  # abandoned (cancelled): no connection leaks
        response.close()


def abort_response(response: httpx.Response) -> None:
    """Called from the cancelling thread; the reading thread then closes the response itself."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # already closed by the server or the reader
            sock.shutdown(socket.SHUT_RDWR)
        return
    response.close()  # not a socket (a mock transport): closing is all there is


class BodyReader:
    def __init__(self, url: str, total_timeout: float, clock: Callable[[], float]) -> None:
        self.url = url
        self.total_timeout = total_timeout
        self._clock = clock

    def error_text(self, response: httpx.Response, cancel: CancelToken) -> str:
        """What of an error's body arrives before the deadline or a cut, up to ERROR_BODY_LIMIT."""
        text = ""
        with contextlib.suppress(*_CUT, IncompleteStream), self._reading(response, cancel) as pieces:
            for piece in pieces:
                text += piece
                if len(text) >= ERROR_BODY_LIMIT:
                    break
        return text

    def whole(self, response: httpx.Response, cancel: CancelToken) -> str:
        try:
            with self._reading(response, cancel) as pieces:
                text = "".join(pieces)
        except _CUT as err:
            raise IncompleteStream(
                f"the answer from {self.url} was cut off: {describe(err)}", "try again"
            ) from None
        cancel.raise_if_cancelled()
        return text

    def stream(
        self, response: httpx.Response, assembler: StreamAssembler, cancel: CancelToken
    ) -> Generator[StreamItem, None, bool]:
        """Yield the stream's deltas; return whether it ended properly ([DONE] or EOF after finish)."""
        try:
            with self._reading(response, cancel) as pieces:
                lines = iter_lines(pieces)
                for chunk in iter_chunks(lines):
                    if chunk == DONE:
                        # Read what follows, bounded like any read: the connection goes back to the pool
                        # (breaking off would cost a new TLS handshake next request).
                        with contextlib.suppress(*_CUT, NanoHermesError):
                            for _ in lines:
                                pass
                        return True
                    yield from assembler.feed(chunk)
        except _CUT:
            pass  # a cut connection after the finish reason loses nothing but the usage chunk
        cancel.raise_if_cancelled()
        return assembler.finish_reason is not None

    @contextlib.contextmanager
    def _reading(self, response: httpx.Response, cancel: CancelToken) -> Iterator[Iterator[str]]:
        """Cancelling aborts the read (which then raises Cancelled); the response is always closed."""
        unregister = cancel.on_cancel(lambda: abort_response(response))
        try:
            yield self._text(response, cancel)
        except _CUT:
            cancel.raise_if_cancelled()
            raise
        finally:
            unregister()
            response.close()

    def _text(self, response: httpx.Response, cancel: CancelToken) -> Iterator[str]:
        deadline = self._clock() + self.total_timeout
        size = 0
        for piece in response.iter_text():
            cancel.raise_if_cancelled()
            if self._clock() > deadline:
                raise IncompleteStream(
                    f"the answer from {self.url} took longer than the {self.total_timeout:g} s "
                    "total deadline",
                    "raise request_timeout, or check the server is not stuck sending keep-alives",
                )
            piece = piece if size else piece.removeprefix("\ufeff")  # a leading BOM
            size += len(piece)
            if size > ANSWER_LIMIT:
                raise IncompleteStream(
                    f"the answer from {self.url} is over {ANSWER_LIMIT // 2**20} MiB; reading stopped",
                    "check the server: no chat answer is that large",
                )
            yield piece


def describe(err: BaseException) -> str:
    """An exception in one line (its type's name when it says nothing)."""
    return shorten(str(err), ONE_LINE) or type(err).__name__
