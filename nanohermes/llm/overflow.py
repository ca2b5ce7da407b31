"""Reading an error body: is it a context overflow, a request too large, a field too long, a quota?

Providers word a context overflow in many ways; each phrase below comes from a real error body (the
test fixtures in tests/llm/fixtures/errors/ name where each was recorded). The error's `code` and
`type` are read first, then the words. Words about a *field* being too long (a tool description over
1024 characters) are a bad request: summarising the conversation would not help. «Token limit» alone
is the output cap, never an overflow.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from nanohermes.core.errors import JSON_ERRORS

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
RATE_PHRASES = (
    "per minute",
    "per day",
    "perminute",
    "perday",
    "per min",
    "(tpm)",
    "(rpm)",
    "(tpd)",
    "retry in",
    "try again in",
)


@dataclass(frozen=True)
class ErrorInfo:
    """What an error body says: its human message, and the codes/types it carries (lower-cased)."""

    message: str
    codes: frozenset[str]

    @property
    def lowered(self) -> str:
        return self.message.lower()


def read_error(data: Any) -> ErrorInfo:
    """The message and codes of an error payload: an object, a list (Gemini), or JSON in a string
    (Ollama and some proxies wrap the upstream body)."""
    messages: list[str] = []
    codes: set[str] = set()
    for node in _nodes(data, depth=0):
        if isinstance(node, str):
            messages.append(node)
            continue
        for key in ("code", "type", "status", "error_type", "param"):
            value = node.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool):
                codes.add(str(value).lower())
    return ErrorInfo(" ".join(dict.fromkeys(m for m in messages if m.strip())), frozenset(codes))


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


def is_context_overflow(info: ErrorInfo) -> bool:
    lowered = info.lowered
    if info.codes & FIELD_CODES or any(phrase in lowered for phrase in FIELD_PHRASES):
        return False
    if info.codes & OVERFLOW_CODES or all(word in lowered for word in GEMINI_WORDS):
        return True
    return any(phrase in lowered for phrase in OVERFLOW_PHRASES)


def is_request_too_large(info: ErrorInfo) -> bool:
    """«Request too large … on tokens per minute»: the request is bigger than the per-minute cap, so
    resending it as is can never succeed (unlike «Rate limit reached», which passes with time)."""
    return REQUEST_TOO_LARGE in info.lowered


def is_quota_exhausted(info: ErrorInfo, *, retry_after: bool = False) -> bool:
    """Out of credit for good. Quota words decide nothing when the server asks to retry later or
    speaks of a per-minute/per-day window: that is a rate limit."""
    lowered = info.lowered
    if "insufficient_quota" in info.codes:
        return True
    if retry_after or any(p in lowered for p in RATE_PHRASES):
        return False
    return any(p in lowered for p in QUOTA_PHRASES)
