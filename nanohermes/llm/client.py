"""ChatClient: any OpenAI-compatible `/chat/completions` endpoint over httpx, no SDK.

Tests inject the httpx client, `sleep`, the clocks and `random`: nothing then waits."""

from __future__ import annotations

import random as _random
import time
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any, cast

import httpx

from nanohermes import __version__
from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import (
    BadResponse,
    Cancelled,
    ConfigError,
    ContextOverflow,
    EndpointUnreachable,
    IncompleteStream,
    LLMError,
    RateLimited,
    ServerError,
    ServerStopped,
)
from nanohermes.core.events import Retrying, StreamItem
from nanohermes.core.types import ChatResult, Message, hide_secrets
from nanohermes.llm.failures import (
    RETRY_AFTER_MAX,
    RETRY_STATUSES,
    Target,
    after_retries,
    backoff_delay,
    parse_retry_after,
    status_error,
    strip_userinfo,
)
from nanohermes.llm.response import StreamAssembler, parse_completion
from nanohermes.llm.transport import BodyReader, describe, new_http_client, proxy_for, send_cancellable
from nanohermes.llm.wire import body_bytes, build_body, rejected_optional_field

if TYPE_CHECKING:
    from nanohermes.config.settings import Settings

CONNECT_TIMEOUT = 10.0
MIN_TOTAL_DEADLINE = 600.0


def real_sleep(seconds: float, cancel: CancelToken) -> bool:
    """Wait `seconds`; True when `cancel` fired meanwhile (an injected sleep must then end at once too)."""
    return cancel.wait(seconds)


class ChatClient:
    def __init__(
        self,
        *,
        base_url: str,
        model: str | None = None,
        api_key: str | None = None,
        http_client: httpx.Client | None = None,
        max_retries: int = 3,
        request_timeout: float = 120.0,
        total_timeout: float | None = None,
        send_reasoning: bool = False,
        max_tokens: int | None = None,
        sleep: Callable[[float, CancelToken], bool] = real_sleep,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        random: Callable[[], float] = _random.random,
        stopped: Callable[[], str | None] | None = None,
    ) -> None:
        self._post_url = f"{base_url.rstrip('/')}/chat/completions"
        self.url, self._url_password = strip_userinfo(self._post_url)
        """`url` names the endpoint in messages: a password in the base URL never shows there."""
        self.model = model
        self._api_key = api_key
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else new_http_client(self._post_url)
        self.max_retries = max_retries
        self._timeout = httpx.Timeout(request_timeout, connect=CONNECT_TIMEOUT, pool=CONNECT_TIMEOUT)
        self.total_timeout = total_timeout or max(MIN_TOTAL_DEADLINE, 5 * request_timeout)
        """Seconds one answer may take in all, however steadily it streams."""
        self._bodies = BodyReader(self.url, self.total_timeout, clock)
        self.send_reasoning = send_reasoning
        self.max_tokens = max_tokens
        self._sleep = sleep
        self._wall_clock = wall_clock
        self._random = random
        self._stopped = stopped
        """Why the --local server is gone, or None."""

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        stopped: Callable[[], str | None] | None = None,
    ) -> ChatClient:
        return cls(
            base_url=settings.base_url,
            model=settings.model,
            api_key=settings.api_key_value(),
            max_retries=settings.max_retries,
            request_timeout=settings.request_timeout,
            send_reasoning=settings.send_reasoning,
            max_tokens=settings.max_output_tokens,
            stopped=stopped,
        )

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def stream(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        *,
        model: str | None = None,
        cancel: CancelToken | None = None,
    ) -> Iterator[StreamItem | ChatResult]:
        target, cancel = self._target(model), cancel or CancelToken()
        result, ended = yield from self._exchange(messages, tools, target, cancel, stream=True)
        if ended and not result.is_empty():
            yield result
            return
        if result.finish_reason in ("length", "content_filter"):
            raise _empty_answer(result)  # the output cap or a filter: asking again cannot help
        # Cut short, or nothing at all: its calls are not trusted; ask once more, without streaming.
        problem = "the answer was empty" if ended else "the stream ended early"
        yield Retrying(1, 0.0, f"{problem}; retrying once without streaming")
        try:
            fallback, _ = yield from self._exchange(messages, tools, target, cancel, stream=False)
        except (IncompleteStream, ContextOverflow, ServerStopped):
            raise
        except LLMError as err:
            raise IncompleteStream(
                f"the stream from {self.url} ended before the answer was complete, "
                f"and the retry without streaming failed: {err.one_line()}",
                "try again; if it repeats, check the server's logs",
                err.status,
            ) from err
        if fallback.is_empty():
            raise self._hidden(_empty_answer(fallback))  # its finish_reason is the server's own text
        yield fallback

    def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        *,
        model: str | None = None,
        cancel: CancelToken | None = None,
    ) -> ChatResult:
        exchange = self._exchange(messages, tools, self._target(model), cancel or CancelToken(), stream=False)
        try:
            while True:  # its events (retries, deltas of a server that streamed anyway) have no reader
                next(exchange)
        except StopIteration as done:
            return cast(ChatResult, done.value[0])

    def _exchange(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None,
        target: Target,
        cancel: CancelToken,
        *,
        stream: bool,
    ) -> Generator[StreamItem, None, tuple[ChatResult, bool]]:
        """One request, read as JSON or as a stream (whichever the server chose): the result, and whether
        it ended properly. A request not streamed must end properly: a half call must not run."""
        body = build_body(target.model, messages, tools, stream, self.send_reasoning, self.max_tokens)
        try:  # whatever the endpoint sent back, the key never leaves in an error
            response = yield from self._open(body, target, cancel)
            kind = response.headers.get("content-type", "").lower()
            if "html" in kind:
                response.close()
                raise BadResponse(
                    f"{self.url} answered with a web page, not a chat completion",
                    "check --base-url: it should be the API root, often ending in /v1",
                )
            assembler = StreamAssembler(target)
            if "event-stream" not in kind and ("json" in kind or not stream):
                yield from parse_completion(self._bodies.whole(response, cancel), assembler)
                return assembler.result(), True
            ended = yield from self._bodies.stream(response, assembler, cancel)
        except LLMError as err:
            raise self._hidden(err) from err.__cause__
        if not (ended or stream):
            raise IncompleteStream(f"the answer from {self.url} ended before it was complete", "try again")
        return assembler.result(), ended

    def _hidden(self, err: LLMError) -> LLMError:
        secrets = (self._api_key or "", self._url_password)
        err.args = (hide_secrets(str(err), secrets), *err.args[1:])
        err.hint = hide_secrets(err.hint, secrets)
        return err

    def _target(self, model: str | None) -> Target:
        name = model or self.model
        if not name:
            raise ConfigError("no model is set", "pass --model NAME or set NANOHERMES_MODEL")
        return Target(model=name, url=self.url, key=self._api_key or "")

    def _request(self, body: dict[str, Any]) -> httpx.Request:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream" if body.get("stream") else "application/json",
            "user-agent": f"nanohermes/{__version__}",
        }
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        return self._http.build_request(
            "POST", self._post_url, content=body_bytes(body), headers=headers, timeout=self._timeout
        )

    def _open(
        self, body: dict[str, Any], target: Target, cancel: CancelToken
    ) -> Generator[Retrying, None, httpx.Response]:
        """Send until a 2xx answer, retrying per SPEC §8 (yielding Retrying before each wait)."""
        retries = 0
        while True:
            cancel.raise_if_cancelled()
            delay: float | None = None
            try:  # cancelling need not wait for the first byte (a local model's prompt may take minutes)
                response = send_cancellable(self._http, self._request(body), cancel)
            except (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout) as err:
                raise ServerError(
                    f"{self.url} sent no answer within {self._timeout.read:g} s ({describe(err)})",
                    "raise request_timeout, or check the server is not overloaded",
                ) from None
            except httpx.HTTPError as err:
                failure: LLMError = self._unreachable(err, retries)
                if isinstance(failure, ServerStopped) or not isinstance(err, _RETRYABLE_TRANSPORT):
                    raise failure from None
                reason = f"cannot reach the endpoint ({describe(err)})"
            else:
                if response.status_code < 300:
                    return response
                text = self._bodies.error_text(response, cancel)
                status = response.status_code
                rejected = rejected_optional_field(status, text, body)
                if rejected:  # an older server that rejects an optional field: ask again without it
                    body = {key: value for key, value in body.items() if key != rejected}
                    continue
                delay = parse_retry_after(response.headers, self._wall_clock())
                failure = status_error(status, text, target, retries, retry_after=delay is not None)
                if status not in RETRY_STATUSES or not isinstance(failure, RateLimited | ServerError):
                    raise failure
                if delay is not None and delay > RETRY_AFTER_MAX:
                    failure.args = (f"{failure} (the server asks to wait {delay:.0f} s before retrying)",)
                    raise failure
                reason = f"HTTP {status}"
            if retries >= self.max_retries:
                raise failure
            retries += 1
            wait = delay if delay is not None else backoff_delay(retries, self._random)
            yield Retrying(retries, wait, reason)
            if self._sleep(wait, cancel):
                raise Cancelled()

    def _unreachable(self, err: httpx.HTTPError, retries: int) -> EndpointUnreachable:
        stopped = self._stopped() if self._stopped is not None else None
        if stopped:  # a dead --local server is named at once, not retried
            return ServerStopped(stopped, "restart nanohermes --local; the log says why it stopped")
        proxy = proxy_for(self._post_url) if self._owns_http else ""
        via = f" through the proxy in {proxy}" if proxy else ""
        message = f"cannot reach {self.url}{via}{after_retries(retries)}: {describe(err)}"
        if proxy:
            return EndpointUnreachable(message, "check the proxy, then --base-url")
        return EndpointUnreachable(message, "check --base-url and that the server is running")


def _empty_answer(result: ChatResult) -> LLMError:
    reason = result.finish_reason or "none"
    hints = {
        "length": "raise max_output_tokens: the reasoning used up the cap",
        "content_filter": "the provider's content filter withheld the answer; rephrase the request",
    }
    hint = hints.get(reason, "try again or rephrase; if it repeats, check the server's logs")
    return LLMError(f"the model returned an empty answer (finish_reason: {reason})", hint)


# Errors raised by `send()` before any response byte arrived, so retrying cannot duplicate an answer.
# Read and write errors included: a server may close a pooled keep-alive connection right after an
# empty streamed body (llama-cpp-python with tools), and the next request on it gets ECONNRESET.
_RETRYABLE_TRANSPORT = (httpx.NetworkError, httpx.ConnectTimeout, httpx.RemoteProtocolError)
