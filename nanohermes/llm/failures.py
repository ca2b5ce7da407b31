"""What went wrong, in one line: HTTP statuses and error payloads → the LLMError tree; retry rules."""

from __future__ import annotations

import datetime
import email.utils
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nanohermes.core.errors import (
    AuthError,
    BadResponse,
    ContextOverflow,
    LLMError,
    ModelNotFound,
    PaymentRequired,
    RateLimited,
    ServerError,
    StreamError,
)
from nanohermes.core.types import shorten
from nanohermes.llm.overflow import (
    ErrorInfo,
    is_context_overflow,
    is_quota_exhausted,
    is_request_too_large,
    read_error,
)

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
OVERFLOW_STATUSES = frozenset({400, 413, 422, 500})
TOO_LARGE_STATUSES = frozenset({413, 429})
BACKOFF_BASE = 1.0
BACKOFF_CAP = 30.0
RETRY_AFTER_MAX = 120.0
KEY_HINT = "check NANOHERMES_API_KEY/OPENAI_API_KEY"
OVERFLOW_HINT = "run /compact or start a new session"
REDACTED = "[redacted]"
ONE_LINE = 300
"""The most characters of an endpoint's own words an error line quotes."""
MIN_KEY_CHARS = 8
"""A key shorter than this (`none`, `dummy` for a local server) is no secret: error text keeps it."""


@dataclass(frozen=True)
class Target:
    """Where a request went, for messages: the model name and the endpoint URL."""

    model: str
    url: str
    has_key: bool
    key: str = field(default="", repr=False, compare=False)
    """The API key, only to hide it: an endpoint may echo it back in an error («Incorrect API key
    provided: sk-…»), and error lines reach the terminal, `--json` and the session file."""


def hide_key(text: str, key: str) -> str:
    """`text` with the API key (also JSON-escaped) redacted — before any cut, so no prefix survives."""
    if len(key) < MIN_KEY_CHARS:
        return text
    text = text.replace(key, REDACTED)
    escaped = json.dumps(key, ensure_ascii=False)[1:-1]
    return text.replace(escaped, REDACTED) if escaped != key else text


def without_key(err: LLMError, key: str) -> LLMError:
    if len(key) >= MIN_KEY_CHARS and key in f"{err} {err.hint}":
        err.args = (hide_key(str(err), key), *err.args[1:])
        err.hint = hide_key(err.hint, key)
    return err


def strip_userinfo(url: str) -> tuple[str, str]:
    """`url` without a `user:password@` part (messages show it), and the password (hidden from errors)."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    if not (sep and at):
        return url, ""
    return f"{scheme}{sep}{host}{slash}{path}", userinfo.partition(":")[2]


def after_retries(retries: int) -> str:
    return f" after {retries} {'retry' if retries == 1 else 'retries'}" if retries else ""


def is_retryable(err: LLMError) -> bool:
    return isinstance(err, RateLimited | ServerError) and err.status in RETRY_STATUSES


def overflow_error(info: ErrorInfo, status: int | None, target: Target) -> ContextOverflow | None:
    detail = shorten(info.message, ONE_LINE)
    said = f": {detail}" if detail else ""
    if status in TOO_LARGE_STATUSES and is_request_too_large(info):
        return ContextOverflow(
            f"the request is larger than {target.model}'s per-minute token limit at this endpoint "
            f"(HTTP {status}){said}",
            "the conversation will be compacted; a plan with higher limits avoids this",
            status,
        )
    if (status is None or status in OVERFLOW_STATUSES) and is_context_overflow(info):
        return ContextOverflow(
            f"the conversation is too long for {target.model}'s context window{said}", OVERFLOW_HINT, status
        )
    return None


_STATUS_ERRORS: dict[str, tuple[type[LLMError], str, str]] = {
    "401": (AuthError, "{problem} (401){said}", KEY_HINT),
    "403": (
        AuthError,
        "access to {model} was refused (403){said}",
        f"{KEY_HINT}; make sure the key may use this model",
    ),
    "credit": (
        PaymentRequired,
        "the account is out of credit ({status}){said}",
        "add credit or check billing at the provider",
    ),
    "404": (
        ModelNotFound,
        "model not found: {model} at {url} (404){said}",
        "check --model, and that --base-url ends in the API root (often /v1)",
    ),
    "429": (
        RateLimited,
        "rate limited by the endpoint (429){after}{said}",
        "wait a minute, or check your plan's limits",
    ),
    "server": (
        ServerError,
        "the endpoint failed with HTTP {status}{after}{said}",
        "try again later or check the server",
    ),
    "redirect": (
        BadResponse,
        "the endpoint redirected the request (HTTP {status}){said}",
        "use the final URL (often https://…/v1) as --base-url",
    ),
    "refused": (BadResponse, "the endpoint refused the request (HTTP {status}){said}", ""),
}
"""The error for a non-2xx status, by `_status_kind`: its class, message and hint."""


def _status_kind(status: int, info: ErrorInfo, retry_after: bool) -> str:
    if status == 402 or (status == 429 and is_quota_exhausted(info, retry_after=retry_after)):
        return "credit"
    if str(status) in _STATUS_ERRORS:
        return str(status)
    if status >= 500 or status in RETRY_STATUSES:
        return "server"
    return "redirect" if 300 <= status < 400 else "refused"


def status_error(
    status: int, body: str, target: Target, retries: int = 0, *, retry_after: bool = False
) -> LLMError:
    """The error for a non-2xx answer; `retry_after`: the server asked to retry later (then quota words
    mean a rate limit)."""
    body = hide_key(body, target.key)
    info = read_error(body)
    detail = shorten(info.message or body.strip(), ONE_LINE)
    said = f": {detail}" if detail else ""
    if _is_web_page(body):  # a proxy's or a website's page: its markup says nothing useful
        if status == 404:
            return ModelNotFound(
                f"no API at {target.url} (404, a web page)",
                "check that --base-url is the API root (often ending in /v1)",
                status,
            )
        said = ": a web page, not an API answer"
    overflow = overflow_error(info, status, target)
    if overflow is not None:
        return overflow
    cls, message, hint = _STATUS_ERRORS[_status_kind(status, info, retry_after)]
    problem = "the endpoint rejected the API key" if target.has_key else "the endpoint needs an API key"
    text = message.format(
        problem=problem,
        model=target.model,
        url=target.url,
        status=status,
        after=after_retries(retries),
        said=said,
    )
    return cls(text, hint, status)


def _is_web_page(body: str) -> bool:
    head = body.lstrip()[:512].lower()
    return head.startswith(("<!doctype html", "<html")) or ("<html" in head and "<head" in head)


def payload_error(error: Any, target: Target, *, in_stream: bool) -> LLMError:
    """The error for an `{"error": …}` object sent inside an HTTP 200 answer."""
    if len(target.key) >= MIN_KEY_CHARS:
        error = json.loads(hide_key(json.dumps(error, ensure_ascii=False), target.key))
    info = read_error(error)
    detail = shorten(info.message or json.dumps(error, ensure_ascii=False), ONE_LINE)
    code = _numeric_code(error)
    overflow = overflow_error(info, code, target)
    if overflow is not None:
        return overflow
    if code is not None and code in (401, 402, 403, 404, 429):
        return status_error(code, json.dumps({"error": detail}), target)
    where = "in the middle of the stream" if in_stream else "instead of an answer"
    cls = StreamError if in_stream else BadResponse
    return cls(
        f"the endpoint reported an error {where}: {detail}",
        "try again; if it repeats, check the server",
        code,
    )


def _numeric_code(error: Any) -> int | None:
    if not isinstance(error, dict):
        return None
    for key in ("code", "status", "status_code"):
        value = error.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value < 600:
            return value
        if isinstance(value, str) and value.isdigit() and 100 <= int(value) < 600:
            return int(value)
    return None


def parse_retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds the server asks us to wait (`retry-after-ms`, then `Retry-After` seconds or HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, when.timestamp() - now)


def backoff_delay(retry: int, random: Callable[[], float]) -> float:
    """Exponential backoff with jitter for the `retry`-th retry (1-based): half fixed, half random."""
    ceiling = min(BACKOFF_CAP, BACKOFF_BASE * 2.0 ** (retry - 1))
    return ceiling / 2 + random() * ceiling / 2
