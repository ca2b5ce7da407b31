"""What went wrong, in one line: HTTP statuses and error payloads → the LLMError tree; retry rules.

Each overflow phrase below comes from a real error body (tests/llm/provider_errors.py names where).
Words about a *field* being too long are a bad request: compacting would not help. «Token limit» alone
is the output cap, never an overflow.
"""

from __future__ import annotations

import contextlib
import datetime
import email.utils
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from nanohermes.core.errors import (
    JSON_ERRORS,
    BadResponse,
    ContextOverflow,
    LLMError,
    RateLimited,
    ServerError,
)
from nanohermes.core.types import hide_secrets, shorten

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
OVERFLOW_STATUSES = frozenset({400, 413, 422, 500})
TOO_LARGE_STATUSES = frozenset({413, 429})
BACKOFF_CAP = 30.0
RETRY_AFTER_MAX = 120.0
KEY_HINT = "check NANOHERMES_API_KEY/OPENAI_API_KEY"
OVERFLOW_HINT = "run /compact or start a new session"
ONE_LINE = 300  # the most characters of an endpoint's own words an error line quotes


OVERFLOW_CODES = frozenset(
    {
        "context_length_exceeded",  # OpenAI, Azure, Groq, Cerebras
        "exceed_context_size_error",  # llama.cpp server (and Ollama, which wraps it)
        "context_window_exceeded",
        "model_context_window_exceeded",
        "1261",  # Z.ai / Zhipu: «Prompt exceeds max length»
    }
)
FIELD_CODES = frozenset({"string_above_max_length", "array_above_max_length"})

OVERFLOW_PHRASES = (
    "maximum context length",  # OpenAI, Azure, DeepSeek, vLLM (old), many proxies
    "context_length_exceeded",
    "reduce the length of the messages",  # Groq, Cerebras
    "maximum prompt length",  # xAI
    "longer than the maximum model length",  # vLLM ≥ 0.6 «The decoder prompt (length …) is longer …»
    "too long to fit into the model",  # vLLM «The prompt (total length …) is too long to fit …»
    "tokens + `max_new_tokens` must be",  # TGI, Together, Hugging Face endpoints
    "context size has been exceeded",  # llama.cpp 500, LM Studio (MLX)
    "exceeds the available context size",  # llama.cpp 400, Ollama with truncate off
    "exceed_context_size",
    "greater than the context length",  # LM Studio «tokens to keep … greater than the context length»
    "when context the overflows",  # LM Studio «Trying to keep the first N tokens when context the overflows»
    "exceed context window",  # llama-cpp-python «Requested tokens (N) exceed context window of M»
    "exceeds the context window",  # OpenAI (Responses-style wording)
    "input exceeds context length",
    "prompt exceeds max length",  # Z.ai / Zhipu
    "exceeded model token limit",  # Moonshot «Your request exceeded model token limit: 262144»
    "exceed context limit",  # Anthropic-compatible «input length and `max_tokens` exceed context limit»
    "prompt is too long",  # Anthropic-compatible «prompt is too long: N tokens > M maximum»
)
# Gemini: «The input token count (3475108) exceeds the maximum number of tokens allowed (1048576).»
GEMINI_WORDS = ("input token count", "exceeds the maximum")
REQUEST_TOO_LARGE = "request too large"  # OpenAI 429 / Groq 413: a per-minute cap below the request
FIELD_PHRASES = ("string too long", "function.name", "function.description", "maximum length 64")
QUOTA_PHRASES = ("insufficient_quota", "exceeded your current quota", "billing", "out of credit")
RATE_WORDS = re.compile(r"per ?(min|day)|\((tpm|rpm|tpd)\)|(retry|try again) in")
"""A per-minute or per-day window, or a time to wait: quota words beside them mean a rate limit."""


@dataclass(frozen=True)
class Target:
    model: str
    url: str
    key: str = field(default="", repr=False, compare=False)
    """The API key ("" if none), also to hide it: an endpoint may echo it back in an error («Incorrect
    API key provided: sk-…»), and error lines reach the terminal, `--json` and the session file."""


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


@dataclass(frozen=True)
class ErrorInfo:
    """An error body's message, and the codes/types it carries (lower-cased)."""

    message: str
    codes: frozenset[str]
    lowered: str


def read_error(data: Any) -> ErrorInfo:
    """The message and codes of an error payload: an object, a list (Gemini), or JSON in a string
    (Ollama and some proxies wrap the upstream body)."""
    messages: list[str] = []
    codes: set[str] = set()
    for node in _nodes(data, depth=0):
        if isinstance(node, str):
            messages.append(node)
            continue
        for key in ("code", "type", "status", "status_code", "error_type", "param"):
            value = node.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool):
                codes.add(str(value).lower())
    message = " ".join(dict.fromkeys(m for m in messages if m.strip()))
    return ErrorInfo(message, frozenset(codes), message.lower())


def _nodes(data: Any, depth: int) -> Iterator[dict[str, Any] | str]:
    if depth > 6:
        return
    if isinstance(data, str):
        try:
            nested = json.loads(data) if data.strip()[:1] in ("{", "[") else None
        except JSON_ERRORS:
            nested = None
        if isinstance(nested, dict | list):
            yield from _nodes(nested, depth + 1)
        else:
            yield data
    elif isinstance(data, list):
        for item in data[:4]:
            yield from _nodes(item, depth + 1)
    elif isinstance(data, dict):
        yield data
        for key in ("error", "message", "detail", "msg", "errors"):
            if key in data:
                yield from _nodes(data[key], depth + 1)


def _is_context_overflow(info: ErrorInfo) -> bool:
    if info.codes & FIELD_CODES or any(phrase in info.lowered for phrase in FIELD_PHRASES):
        return False
    if info.codes & OVERFLOW_CODES or all(word in info.lowered for word in GEMINI_WORDS):
        return True
    return any(phrase in info.lowered for phrase in OVERFLOW_PHRASES)


def _is_quota_exhausted(info: ErrorInfo, retry_after: bool) -> bool:
    """Out of credit for good. Quota words decide nothing when the server asks to retry later or
    speaks of a per-minute/per-day window: that is a rate limit."""
    if "insufficient_quota" in info.codes:
        return True
    if retry_after or RATE_WORDS.search(info.lowered):
        return False
    return any(phrase in info.lowered for phrase in QUOTA_PHRASES)


def overflow_error(info: ErrorInfo, status: int | None, target: Target, said: str) -> ContextOverflow | None:
    if status in TOO_LARGE_STATUSES and REQUEST_TOO_LARGE in info.lowered:
        return ContextOverflow(
            f"the request is larger than {target.model}'s per-minute token limit at this endpoint "
            f"(HTTP {status}){said}",
            "the conversation will be compacted; a plan with higher limits avoids this",
            status,
        )
    if (status is None or status in OVERFLOW_STATUSES) and _is_context_overflow(info):
        return ContextOverflow(
            f"the conversation is too long for {target.model}'s context window{said}", OVERFLOW_HINT, status
        )
    return None


def status_error(
    status: int, body: str, target: Target, retries: int = 0, *, retry_after: bool = False
) -> LLMError:
    body = hide_secrets(body, [target.key])
    info = read_error(body)
    detail = shorten(info.message or body.strip(), ONE_LINE)
    said = f": {detail}" if detail else ""
    if _is_web_page(body):  # a proxy's or a website's page: its markup says nothing useful
        if status == 404:
            return BadResponse(
                f"no API at {target.url} (404, a web page)",
                "check that --base-url is the API root (often ending in /v1)",
                status,
            )
        said = ": a web page, not an API answer"
    if overflow := overflow_error(info, status, target, said):
        return overflow
    if status == 402 or (status == 429 and _is_quota_exhausted(info, retry_after)):
        hint = "add credit or check billing at the provider"
        return BadResponse(f"the account is out of credit ({status}){said}", hint, status)
    if status == 401:
        problem = "rejected the API key" if target.key else "needs an API key"
        return BadResponse(f"the endpoint {problem} (401){said}", KEY_HINT, status)
    if status == 403:
        hint = f"{KEY_HINT}; make sure the key may use this model"
        return BadResponse(f"access to {target.model} was refused (403){said}", hint, status)
    if status == 404:
        hint = "check --model, and that --base-url ends in the API root (often /v1)"
        return BadResponse(f"model not found: {target.model} at {target.url} (404){said}", hint, status)
    after = after_retries(retries)
    if status == 429:
        hint = "wait a minute, or check your plan's limits"
        return RateLimited(f"rate limited by the endpoint (429){after}{said}", hint, status)
    if status >= 500 or status in RETRY_STATUSES:
        hint = "try again later or check the server"
        return ServerError(f"the endpoint failed with HTTP {status}{after}{said}", hint, status)
    if 300 <= status < 400:
        hint = "use the final URL (often https://…/v1) as --base-url"
        return BadResponse(f"the endpoint redirected the request (HTTP {status}){said}", hint, status)
    return BadResponse(f"the endpoint refused the request (HTTP {status}){said}", "", status)


def _is_web_page(body: str) -> bool:
    head = body.lstrip()[:512].lower()
    return head.startswith(("<!doctype html", "<html")) or ("<html" in head and "<head" in head)


def payload_error(error: Any, target: Target, *, in_stream: bool) -> LLMError:
    """The error for an `{"error": …}` object sent inside an HTTP 200 answer."""
    error = json.loads(hide_secrets(json.dumps(error, ensure_ascii=False), [target.key]))
    info = read_error(error)
    detail = shorten(info.message or json.dumps(error, ensure_ascii=False), ONE_LINE)
    statuses = sorted(int(code) for code in info.codes if code.isdecimal() and 100 <= int(code) < 600)
    code = statuses[0] if statuses else None
    if overflow := overflow_error(info, code, target, f": {detail}"):
        return overflow
    if code in (401, 402, 403, 404, 429):
        return status_error(code, json.dumps({"error": detail}), target)
    where = "in the middle of the stream" if in_stream else "instead of an answer"
    return BadResponse(
        f"the endpoint reported an error {where}: {detail}",
        "try again; if it repeats, check the server",
        code,
    )


def parse_retry_after(headers: Mapping[str, str], now: float) -> float | None:
    for name, per_second in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        if name in headers:
            with contextlib.suppress(ValueError):
                return max(0.0, float(headers[name]) / per_second)
    try:
        when = email.utils.parsedate_to_datetime(headers.get("retry-after", ""))
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, when.timestamp() - now)


def backoff_delay(retry: int, random: Callable[[], float]) -> float:
    """Exponential from 1 s, half of it random; `retry` counts from 1."""
    ceiling = min(BACKOFF_CAP, 2.0 ** (retry - 1))
    return ceiling / 2 + random() * ceiling / 2
