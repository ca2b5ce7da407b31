"""Reading a chat response's body: an error's text, a whole JSON answer, or an SSE stream.

Each read is bounded by the client's total deadline and ends at once when the turn is cancelled (the
response is aborted from the cancelling thread); a connection cut mid-way becomes IncompleteStream.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterator

import httpx

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import Cancelled, IncompleteStream, NanoHermesError
from nanohermes.core.events import StreamItem
from nanohermes.core.types import shorten
from nanohermes.llm.failures import ONE_LINE
from nanohermes.llm.interrupt import abort_response
from nanohermes.llm.response import StreamAssembler
from nanohermes.llm.sse import Marker, iter_chunks, iter_lines

ERROR_BODY_LIMIT = 64 * 1024
"""At most this much of an error response is read: enough for any provider's error JSON."""
ANSWER_LIMIT = 128 * 1024 * 1024
"""At most this many characters of an answer are read (a 128k-token answer streamed token by token is
~40 MB): a server that streams without end must not fill the memory before the total deadline."""
_CUT = (httpx.HTTPError, httpx.StreamError, OSError, ValueError)


class BodyReader:
    """Reads the bodies of one endpoint's responses (`url` names it in errors)."""

    def __init__(self, url: str, total_timeout: float, clock: Callable[[], float]) -> None:
        self.url = url
        self.total_timeout = total_timeout
        self._clock = clock

    def error_text(self, response: httpx.Response, cancel: CancelToken | None) -> str:
        """What of an error's body arrives before the deadline, up to ERROR_BODY_LIMIT ("" if none)."""
        text = ""
        try:
            with self._guarded(response, cancel) as deadline:
                for piece in response.iter_text():
                    text += piece
                    if len(text) >= ERROR_BODY_LIMIT or self._past(deadline, cancel):
                        break
        except _CUT:
            return ""
        return text

    def whole(self, response: httpx.Response, cancel: CancelToken | None) -> str:
        """The whole body (a JSON answer to a streamed request, or to a plain one)."""
        try:
            with self._guarded(response, cancel) as deadline:
                text = "".join(self._text(response, deadline, cancel))
        except _CUT as err:
            raise IncompleteStream(
                f"the answer from {self.url} was cut off: {describe(err)}", "try again"
            ) from None
        if cancel is not None:
            cancel.raise_if_cancelled()
        return text.removeprefix("\ufeff")

    def stream(
        self, response: httpx.Response, assembler: StreamAssembler, cancel: CancelToken | None
    ) -> Generator[StreamItem, None, bool]:
        """Yield the stream's deltas; return whether it ended properly ([DONE] or EOF after finish)."""
        try:
            with self._guarded(response, cancel) as deadline:
                lines = iter_lines(self._text(response, deadline, cancel))
                for chunk in iter_chunks(lines):
                    if chunk is Marker.DONE:
                        _drain(lines)
                        return True
                    yield from assembler.feed(chunk)
        except _CUT:
            pass  # a cut connection after the finish reason loses nothing but the usage chunk
        if cancel is not None:
            cancel.raise_if_cancelled()
        return assembler.finish_reason is not None

    @contextlib.contextmanager
    def _guarded(self, response: httpx.Response, cancel: CancelToken | None) -> Iterator[float]:
        """A read of `response`'s body, given its deadline: cancelling aborts it (a read cut that
        way raises Cancelled), and the response is closed however the read ends."""
        deadline = self._clock() + self.total_timeout
        unregister = cancel.on_cancel(lambda: abort_response(response)) if cancel is not None else None
        try:
            yield deadline
        except _CUT:
            if cancel is not None and cancel.cancelled:
                raise Cancelled() from None
            raise
        finally:
            if unregister is not None:
                unregister()
            response.close()

    def _text(self, response: httpx.Response, deadline: float, cancel: CancelToken | None) -> Iterator[str]:
        """The body's text as it arrives (decoded by httpx), within the deadline and ANSWER_LIMIT."""
        size = 0
        for piece in response.iter_text():
            if self._past(deadline, cancel):
                raise IncompleteStream(
                    f"the answer from {self.url} took longer than the {self.total_timeout:g} s "
                    "total deadline",
                    "raise request_timeout, or check the server is not stuck sending keep-alives",
                )
            size += len(piece)
            if size > ANSWER_LIMIT:
                mib = ANSWER_LIMIT // (1024 * 1024)
                raise IncompleteStream(
                    f"the answer from {self.url} is over {mib} MiB; reading stopped",
                    "check the server: no chat answer is that large",
                )
            yield piece

    def _past(self, deadline: float, cancel: CancelToken | None) -> bool:
        """Whether `deadline` has passed; raises Cancelled when the turn was cancelled."""
        if cancel is not None and cancel.cancelled:
            raise Cancelled()
        return self._clock() > deadline


def _drain(lines: Iterator[str]) -> None:
    """Read what follows `[DONE]` so that the connection goes back to the pool (breaking off would
    cost a new TLS handshake next request), bounded like any read."""
    with contextlib.suppress(*_CUT, NanoHermesError):
        for _ in lines:
            pass


def describe(err: BaseException) -> str:
    """An exception in one line (its type's name when it says nothing)."""
    return shorten(str(err), ONE_LINE) or type(err).__name__
