"""What a message or delta says, whatever shape the server gives it.

- `content` as a string, or as a list of parts (Mistral: `[{"type": "thinking", "thinking": [...]},
  {"type": "text", "text": ...}]`): text parts are the answer, thinking/reasoning parts reasoning.
- reasoning as `reasoning_content` or `reasoning` (a string), or `reasoning_details` (OpenRouter,
  Snowflake: `[{"type": "reasoning.text", "text": ...}, {"type": "reasoning.summary", "summary": ...}]`;
  encrypted entries carry nothing to show). A string field wins: OpenRouter sends both.
- `refusal` (OpenAI): the model declined; shown as the answer.
- `choices`: only the choice with `index` 0 is read (a proxy may fan out `n > 1`).
"""

from __future__ import annotations

from typing import Any

from nanohermes.llm.wire import REASONING_KEYS

_THINKING_TYPES = frozenset({"thinking", "reasoning"})


def first_choice(data: dict[str, Any]) -> dict[str, Any] | None:
    """The choice with `index` 0 (or without an index), or None when the chunk has none."""
    choices = data.get("choices")
    if not isinstance(choices, list):
        return None
    for choice in choices:
        if isinstance(choice, dict) and choice.get("index", 0) in (0, None):
            return choice
    return None


def split_content(content: Any) -> tuple[str, str]:
    """(answer text, reasoning text) of a `content` field: a string, or a list of parts."""
    if isinstance(content, str):
        return content, ""
    if not isinstance(content, list):
        return "", ""
    text: list[str] = []
    thinking: list[str] = []
    for part in content:
        if isinstance(part, str):
            text.append(part)
        elif isinstance(part, dict):
            kind = part.get("type")
            if kind in _THINKING_TYPES:
                thinking.append(_texts(part.get(kind) or part.get("text")))
            elif kind in (None, "text", "output_text"):
                text.append(_texts(part.get("text")))
    return "".join(text), "".join(thinking)


def reasoning_of(part: dict[str, Any]) -> str:
    """The reasoning text of a delta or message (see the module docstring)."""
    for key in REASONING_KEYS:
        value = part.get(key)
        if isinstance(value, str) and value:
            return value
    details = part.get("reasoning_details")
    if not isinstance(details, list):
        return ""
    found: list[str] = []
    for item in details:
        if isinstance(item, dict):
            value = item.get("text") if item.get("text") is not None else item.get("summary")
            found.append(_texts(value))
    return "".join(found)


def refusal_of(part: dict[str, Any]) -> str:
    value = part.get("refusal")
    return value if isinstance(value, str) else ""


def _texts(value: Any) -> str:
    """A string, or the text of a list of `{"type": "text", "text": ...}` pieces."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_texts(item.get("text") if isinstance(item, dict) else item) for item in value)
    return ""
