"""Plain data shared by every layer. Stdlib only. Messages stay in the OpenAI wire format (plain dicts)
everywhere: the endpoint, the session file and the distiller all take it, so no layer converts."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

ROLES = frozenset({"system", "user", "assistant", "tool"})
Message = dict[str, Any]
_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """Each lone surrogate (half of a cut emoji's JSON escape, a file name that is not UTF-8) as
    U+FFFD: printing, a session file or the request to the model would fail on it."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def with_valid_text(value: Any) -> Any:
    """`valid_text` on every string in a parsed JSON `value`, keys too, in place and without
    recursion (it may be nested as deeply as the parser allows)."""
    holder = [value]
    stack: list[Any] = [holder]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key in [key for key in node if isinstance(key, str) and valid_text(key) != key]:
                node[valid_text(key)] = node.pop(key)
        places: list[Any] = list(node) if isinstance(node, dict) else list(range(len(node)))
        for place in places:
            item = node[place]
            if isinstance(item, str):
                node[place] = valid_text(item)
            elif isinstance(item, dict | list):
                stack.append(item)
    return holder[0]


@dataclass(frozen=True)
class ToolCall:
    """`arguments`: the JSON text exactly as the model sent it."""

    id: str
    name: str
    arguments: str = "{}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments or "{}"},
        }


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    name: str
    content: str
    ok: bool = True
    images: tuple[str, ...] = ()  # data URLs of the images the call showed (view_image)

    def to_message(self) -> Message:
        return {"role": "tool", "tool_call_id": self.call_id, "content": self.content}


@dataclass(frozen=True)
class Shown:
    """What a tool returns to show the model images (data URLs) too."""

    text: str
    images: tuple[str, ...]


IMAGES_SHOWN = "[the images view_image opened]"


def with_images(text: str, images: list[str] | tuple[str, ...]) -> str | list[dict[str, Any]]:
    if not images:
        return text
    parts = [{"type": "image_url", "image_url": {"url": url}} for url in images]
    return [{"type": "text", "text": text}, *parts]


def shown_images(results: list[ToolResult]) -> list[Message]:
    """The user message that carries a batch's images: a tool message holds only text."""
    images = [url for result in results for url in result.images]
    return [{"role": "user", "content": with_images(IMAGES_SHOWN, images)}] if images else []


CHARS_PER_TOKEN = 4  # the estimate when a server reports no usage (llama-cpp-python when streaming)
MESSAGE_OVERHEAD_TOKENS = 4  # what a chat template adds around each message, as OpenAI counts


@dataclass(frozen=True)
class Usage:
    """Token counts as reported, or `estimated` when none were (so is a sum when any part is)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    estimated: bool = False

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
            self.estimated or other.estimated,
        )

    def to_dict(self) -> dict[str, Any]:
        counts = asdict(self)
        return counts if self.estimated else {k: v for k, v in counts.items() if k != "estimated"}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Usage:
        if not isinstance(data, dict):
            return cls()
        prompt = as_count(data.get("prompt_tokens"))
        completion = as_count(data.get("completion_tokens"))
        total = as_count(data.get("total_tokens")) or prompt + completion
        return cls(prompt, completion, total, data.get("estimated") is True)


@dataclass
class ChatResult:
    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    refusal: str = ""  # the model declined (OpenAI `refusal`); shown as the answer

    def is_empty(self) -> bool:
        return not self.content.strip() and not self.refusal.strip() and not self.tool_calls

    def counted_usage(self, sent: list[Message], tools: Any = None) -> Usage:
        if self.usage.total_tokens:
            return self.usage
        prompt = sum(map(message_chars, sent)) + (len(json.dumps(tools, ensure_ascii=False)) if tools else 0)
        prompt_tokens = -(-prompt // CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS * len(sent)
        completion_tokens = -(-message_chars(self.to_message()) // CHARS_PER_TOKEN)
        return Usage(prompt_tokens, completion_tokens, prompt_tokens + completion_tokens, estimated=True)

    def to_message(self) -> Message:
        """A refusal is kept as the content; the model client decides whether to send the reasoning back."""
        message: Message = {"role": "assistant", "content": self.content or self.refusal}
        if self.tool_calls:
            message["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.reasoning:
            message["reasoning_content"] = self.reasoning
        return message


def message_text(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(part for part in parts if isinstance(part, str))
    return ""


def plural(count: int, noun: str) -> str:
    """`1 memory`, `2 memories`, `0 best matches`."""
    if count == 1:
        return f"1 {noun}"
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return f"{count:,} {noun[:-1]}ies"
    return f"{count:,} {noun}es" if noun.endswith(("s", "sh", "ch", "x")) else f"{count:,} {noun}s"


MIN_SECRET_CHARS = 8  # a shorter configured key (`none`, `dummy` for a local server) is no secret


def hide_secrets(text: str, secrets: Iterable[str], marker: str = "[redacted]") -> str:
    """`text` with each of `secrets` replaced by `marker`, also JSON-escaped (as an endpoint echoing it
    in an error, or a JSON file, holds it) — before any cut, so no prefix survives."""
    for secret in secrets:
        if len(secret) >= MIN_SECRET_CHARS:
            escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
            text = text.replace(secret, marker).replace(escaped, marker)
    return text


def shorten(text: str, width: int) -> str:
    """`text` on one line, at most `width` characters, cut at a word in the second half with «…»."""
    line = " ".join(text.split())
    if len(line) <= width:
        return line
    cut = line[: max(1, width - 1)]
    space = cut.rfind(" ")
    if space >= width // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def message_chars(message: Message) -> int:
    size = len(message_text(message)) + len(str(message.get("reasoning_content") or ""))
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            size += len(str(function.get("name") or "")) + len(str(function.get("arguments") or ""))
    return size


MAX_COUNT = 10**15
"""No real count comes near this. A larger one (a hostile reply or session file) is no count: summed
into the totals it could pass the 4,300 digits Python turns into text, failing every later save."""


def as_count(value: Any) -> int:
    """A count as sent, or 0 when it is not one (a float, a bool, a negative number, one over MAX_COUNT)."""
    valid = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT
    return value if valid else 0


def message_problem(message: Any) -> str | None:
    """What makes `message` unusable as a wire-format chat message, or None when it is fine."""
    if not isinstance(message, dict):
        return f"a {type(message).__name__}, not a message object"
    role = message.get("role")
    if not isinstance(role, str) or role not in ROLES:
        return f"role {role!r} is not one of system, user, assistant, tool"
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        return f"content is a {type(content).__name__}, not text or a list of parts"
    if isinstance(content, list):
        if not all(isinstance(part, dict) for part in content):
            return "content holds a part that is not an object"
        if any(part.get("type") == "text" and not isinstance(part.get("text"), str) for part in content):
            return "content holds a text part whose text is not a string"
    for key in ("name", "tool_call_id"):
        if key in message and not isinstance(message[key], str):
            return f"{key} is not a string"
    calls = message.get("tool_calls")
    if calls is None:
        return None
    if not isinstance(calls, list):
        return f"tool_calls is a {type(calls).__name__}, not a list"
    for number, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            return f"tool_calls[{number}] has no function object"
        if not isinstance(function.get("name"), str):
            return f"tool_calls[{number}].function.name is not a string"
        if not isinstance(function.get("arguments", ""), str | dict):
            return f"tool_calls[{number}].function.arguments is neither text nor an object"
    return None
