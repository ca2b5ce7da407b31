"""What went wrong, in one line: HTTP statuses and error payloads → the LLMError tree; retry rules."""

from __future__ import annotations

import datetime
import email.utils
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nanohermes.errors import (
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

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
OVERFLOW_STATUSES = frozenset({400, 413})
OVERFLOW_MARKERS = (
    "context_length",
    "maximum context length",
    "context size",
    "context window",
    "exceed_context",
    "token limit",
    "too long",
)
QUOTA_MARKERS = ("insufficient_quota", "exceeded your current quota", "billing")
BACKOFF_BASE = 1.0
BACKOFF_CAP = 30.0
RETRY_AFTER_MAX = 120.0
KEY_HINT = "check NANOHERMES_API_KEY/OPENAI_API_KEY"
OVERFLOW_HINT = "run /compact or start a new session"


@dataclass(frozen=True)
class Target:
    """Where a request went, for messages: the model name and the endpoint URL."""

    model: str
    url: str
    has_key: bool


def server_message(body: str) -> str:
    """The human part of an error body (`error.message`, `error`, `message`, `detail`), one line."""
    text = body.strip()
    try:
        data: Any = json.loads(text)
    except ValueError:
        return one_line(text)
    return one_line(payload_message(data) or text)


def payload_message(data: Any) -> str:
    if isinstance(data, str):
        return data
    if isinstance(data, list) and data:
        return payload_message(data[0])
    if not isinstance(data, dict):
        return ""
    for key in ("error", "message", "detail", "msg"):
        if key in data:
            found = payload_message(data[key])
            if found:
                return found
    return ""


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def after_retries(retries: int) -> str:
    """` after 3 retries` for an error message, or nothing when none were spent."""
    return f" after {retries} {'retry' if retries == 1 else 'retries'}" if retries else ""


def is_context_overflow(message: str) -> bool:
    lowered = message.lower()
    return any(marker in lowered for marker in OVERFLOW_MARKERS)


def is_quota_exhausted(message: str) -> bool:
    lowered = message.lower()
    return any(marker in lowered for marker in QUOTA_MARKERS)


def status_error(status: int, body: str, target: Target, retries: int = 0) -> LLMError:
    """The error for a non-2xx answer. `retries` is how many retries were spent before giving up."""
    detail = server_message(body)
    said = f": {detail}" if detail else ""
    after = after_retries(retries)
    if status in OVERFLOW_STATUSES and is_context_overflow(detail):
        return ContextOverflow(
            f"the conversation is too long for {target.model}'s context window{said}", OVERFLOW_HINT, status
        )
    if status == 401:
        problem = "the endpoint rejected the API key" if target.has_key else "the endpoint needs an API key"
        return AuthError(f"{problem} (401){said}", KEY_HINT, status)
    if status == 403:
        return AuthError(
            f"access to {target.model} was refused (403){said}",
            f"{KEY_HINT}; make sure the key may use this model",
            status,
        )
    if status == 402 or (status == 429 and is_quota_exhausted(detail)):
        return PaymentRequired(
            f"the account is out of credit ({status}){said}",
            "add credit or check billing at the provider",
            status,
        )
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


def payload_error(error: Any, target: Target, *, in_stream: bool) -> LLMError:
    """The error for an `{"error": …}` object sent inside an HTTP 200 answer."""
    detail = one_line(payload_message(error) or json.dumps(error, ensure_ascii=False))
    code = _numeric_code(error)
    if is_context_overflow(detail):
        return ContextOverflow(
            f"the conversation is too long for {target.model}'s context window: {detail}", OVERFLOW_HINT, code
        )
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
