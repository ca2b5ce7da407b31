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
    """`text` with the API key (also JSON-escaped) replaced by "[redacted]" — before any cutting to
    one line, so no prefix of it survives a cut."""
    if len(key) < MIN_KEY_CHARS:
        return text
    text = text.replace(key, REDACTED)
    escaped = json.dumps(key, ensure_ascii=False)[1:-1]
    return text.replace(escaped, REDACTED) if escaped != key else text


def without_key(err: LLMError, key: str) -> LLMError:
    """The same error with the key hidden from its message and hint (in place)."""
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


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def after_retries(retries: int) -> str:
    """` after 3 retries` for an error message, or nothing when none were spent."""
    return f" after {retries} {'retry' if retries == 1 else 'retries'}" if retries else ""


def is_retryable(err: LLMError) -> bool:
    """Whether sending the same request again may succeed (a rate limit or a server hiccup)."""
    return isinstance(err, RateLimited | ServerError) and err.status in RETRY_STATUSES


def overflow_error(info: ErrorInfo, status: int | None, target: Target) -> ContextOverflow | None:
    """The ContextOverflow an error body describes, if it describes one (see nanohermes.llm.overflow)."""
    detail = one_line(info.message)
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


def _account_error(
    status: int, said: str, target: Target, info: ErrorInfo, *, retry_after: bool
) -> LLMError | None:
    """The error when the key or the account is the problem (401, 403, no credit left), else None."""
    if status == 401:
        problem = "the endpoint rejected the API key" if target.has_key else "the endpoint needs an API key"
        return AuthError(f"{problem} (401){said}", KEY_HINT, status)
    if status == 403:
        return AuthError(
            f"access to {target.model} was refused (403){said}",
            f"{KEY_HINT}; make sure the key may use this model",
            status,
        )
    if status == 402 or (status == 429 and is_quota_exhausted(info, retry_after=retry_after)):
        return PaymentRequired(
            f"the account is out of credit ({status}){said}",
            "add credit or check billing at the provider",
            status,
        )
    return None


def status_error(
    status: int, body: str, target: Target, retries: int = 0, *, retry_after: bool = False
) -> LLMError:
    """The error for a non-2xx answer. `retries` is how many retries were spent before giving up;
    `retry_after` whether the server asked to retry later (then quota words mean a rate limit)."""
    body = hide_key(body, target.key)
    info = read_error(body)
    detail = one_line(info.message or body.strip())
    said = f": {detail}" if detail else ""
    if _is_web_page(body):  # a proxy's or a website's page: its markup says nothing useful
        if status == 404:
            return ModelNotFound(
                f"no API at {target.url} (404, a web page)",
                "check that --base-url is the API root (often ending in /v1)",
                status,
            )
        said = ": a web page, not an API answer"
    after = after_retries(retries)
    overflow = overflow_error(info, status, target)
    if overflow is not None:
        return overflow
    refused = _account_error(status, said, target, info, retry_after=retry_after)
    if refused is not None:
        return refused
    if status == 404:
        return ModelNotFound(
            f"model not found: {target.model} at {target.url} (404){said}",
            "check --model, and that --base-url ends in the API root (often /v1)",
            status,
        )
    if status == 429:
        return RateLimited(
            f"rate limited by the endpoint (429){after}{said}",
            "wait a minute, or check your plan's limits",
            status,
        )
    if status >= 500 or status in RETRY_STATUSES:
        return ServerError(
            f"the endpoint failed with HTTP {status}{after}{said}",
            "try again later or check the server",
            status,
        )
    if 300 <= status < 400:
        return BadResponse(
            f"the endpoint redirected the request (HTTP {status}){said}",
            "use the final URL (often https://…/v1) as --base-url",
            status,
        )
    return BadResponse(f"the endpoint refused the request (HTTP {status}){said}", "", status)


def _is_web_page(body: str) -> bool:
    head = body.lstrip()[:512].lower()
    return head.startswith(("<!doctype html", "<html")) or ("<html" in head and "<head" in head)


def payload_error(error: Any, target: Target, *, in_stream: bool) -> LLMError:
    """The error for an `{"error": …}` object sent inside an HTTP 200 answer."""
    if len(target.key) >= MIN_KEY_CHARS:
        error = json.loads(hide_key(json.dumps(error, ensure_ascii=False), target.key))
    info = read_error(error)
    detail = one_line(info.message or json.dumps(error, ensure_ascii=False))
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
