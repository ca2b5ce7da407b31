"""Chat-completion answers → ChatResult: the streamed chunks (StreamAssembler) or one JSON body.

Shapes servers use: `content` as a string or a list of parts (Mistral's thinking parts are reasoning);
reasoning as `reasoning_content`/`reasoning`, or a `reasoning_details` list of text and summary entries
(OpenRouter, Snowflake; a string field wins: OpenRouter sends both); `refusal` (OpenAI), shown as the
answer. Only the choice with `index` 0 is read (a proxy may fan out `n > 1`).
"""

from __future__ import annotations

from typing import Any

from nanohermes.core.errors import BadResponse
from nanohermes.core.events import ReasoningDelta, StreamItem, TextDelta
from nanohermes.core.types import ChatResult, Usage
from nanohermes.llm.accumulate import ToolCallAccumulator
from nanohermes.llm.failures import Target, payload_error
from nanohermes.llm.sse import Chunk, json_object
from nanohermes.llm.wire import REASONING_KEYS

_THINKING_TYPES = frozenset({"thinking", "reasoning"})


def first_choice(data: dict[str, Any]) -> dict[str, Any] | None:
    choices = data.get("choices")
    choices = [item for item in choices if isinstance(item, dict)] if isinstance(choices, list) else []
    return next((choice for choice in choices if choice.get("index", 0) in (0, None)), None)


def split_content(content: Any) -> tuple[str, str]:
    """(answer, reasoning) of a `content` string or list of parts."""
    if not isinstance(content, list):
        return _texts(content), ""
    text: list[str] = []
    thinking: list[str] = []
    for part in content:
        if isinstance(part, str):
            text.append(part)
        elif isinstance(part, dict) and (kind := part.get("type")) in _THINKING_TYPES:
            thinking.append(_texts(part.get(kind) or part.get("text")))
        elif isinstance(part, dict) and kind in (None, "text", "output_text"):
            text.append(_texts(part.get("text")))
    return "".join(text), "".join(thinking)


def reasoning_of(part: dict[str, Any]) -> str:
    for key in REASONING_KEYS:
        value = part.get(key)
        if isinstance(value, str) and value:
            return value
    details = part.get("reasoning_details")
    items = [item for item in details if isinstance(item, dict)] if isinstance(details, list) else []
    return "".join(_texts(item.get("text")) or _texts(item.get("summary")) for item in items)


def _texts(value: Any) -> str:
    """A string, or the text of a list of `{"type": "text", "text": ...}` pieces."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_texts(item.get("text") if isinstance(item, dict) else item) for item in value)
    return ""


def find_usage(data: dict[str, Any], choice: dict[str, Any] | None) -> Usage | None:
    """Usage from top-level `usage`, the choice's (some local servers) or `x_groq.usage`."""
    groq = data.get("x_groq")
    groq_usage = groq.get("usage") if isinstance(groq, dict) else None
    for candidate in (data.get("usage"), (choice or {}).get("usage"), groq_usage):
        usage = Usage.from_dict(candidate)
        if usage.total_tokens:
            return usage
    return None


class StreamAssembler:
    """Stream chunks (or a whole answer) → deltas to show, and the final ChatResult."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._refusal: list[str] = []
        self._calls = ToolCallAccumulator()
        self.finish_reason: str | None = None
        self.usage = Usage()

    def feed(self, chunk: Chunk) -> list[StreamItem]:
        """Raises an LLMError for an `error` chunk (even inside HTTP 200)."""
        if chunk.get("error"):
            raise payload_error(chunk["error"], self.target, in_stream=True)
        choice = first_choice(chunk)
        self.usage = find_usage(chunk, choice) or self.usage
        if choice is None:
            return []
        delta, whole = choice.get("delta"), False
        if not isinstance(delta, dict):  # a whole message (a JSON answer, or some servers' last chunk)
            message = choice.get("message")
            delta, whole = (message if isinstance(message, dict) else {}), True
        items = self._take(delta, whole)
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            if finish == "error":
                raise payload_error(
                    choice.get("error") or "finish_reason: error", self.target, in_stream=True
                )
            self.finish_reason = finish
        return items

    def _take(self, delta: dict[str, Any], whole: bool) -> list[StreamItem]:
        text, thinking = split_content(delta.get("content"))
        items: list[StreamItem] = []
        for reasoning in (reasoning_of(delta), thinking):
            if reasoning:
                self._reasoning.append(reasoning)
                items.append(ReasoningDelta(reasoning))
        if text:
            self._content.append(text)
            items.append(TextDelta(text))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:  # shown as the answer
            self._refusal.append(refusal)
            items.append(TextDelta(refusal))
        tool_calls = delta.get("tool_calls")
        if isinstance(tool_calls, list):
            for position, call in enumerate(tool_calls):
                if isinstance(call, dict):
                    self._calls.add(_whole_call(call, position) if whole else call)
        return items

    def result(self) -> ChatResult:
        return ChatResult(
            content="".join(self._content),
            reasoning="".join(self._reasoning),
            tool_calls=self._calls.calls(),
            finish_reason=self.finish_reason,
            usage=self.usage,
            refusal="".join(self._refusal),
        )


def _whole_call(call: dict[str, Any], position: int) -> dict[str, Any]:
    """A whole message's call as a delta: its own index whatever it says, and `"function": "read_file"`
    (some models write the name alone) taken as the name."""
    function = call.get("function")
    if isinstance(function, str):
        function = {"name": function}
    return {**call, "index": position, "function": function}


def parse_completion(body: str, assembler: StreamAssembler) -> list[StreamItem]:
    """A non-streamed answer fed to `assembler`: the deltas it would have streamed."""
    data = json_object(body, "the endpoint's answer")
    if data.get("error"):
        raise payload_error(data["error"], assembler.target, in_stream=False)
    if first_choice(data) is None:
        raise BadResponse(
            "the endpoint's answer has no choices", "check --base-url points at a chat-completions endpoint"
        )
    return assembler.feed(data)
