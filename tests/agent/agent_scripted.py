"""A scripted model (the methods the agent calls on `nanohermes.llm.ChatClient`) and history checks."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from nanohermes.core.cancel import CancelToken
from nanohermes.core.events import StreamItem, TextDelta
from nanohermes.core.types import ChatResult, Message, ToolCall, Usage
from nanohermes.memory import DISTILL_SYSTEM_PROMPT

T = TypeVar("T")
Step = ChatResult | BaseException | Callable[[list[Message], CancelToken], Iterator[StreamItem | ChatResult]]


def text(content: str) -> ChatResult:
    return ChatResult(content=content, finish_reason="stop", usage=Usage(10, 5, 15))


def calls(*specs: tuple[str, dict[str, Any]], content: str = "") -> ChatResult:
    built = [ToolCall(f"call_{n}", name, json.dumps(args)) for n, (name, args) in enumerate(specs, 1)]
    return ChatResult(content=content, tool_calls=built, finish_reason="tool_calls", usage=Usage(10, 5, 15))


class ScriptedModel:
    """`stream` answers from `steps` in order; `complete` answers distillation requests from
    `distill` (default "[]") and any other request (summaries) from `completions`."""

    def __init__(self, steps: list[Step] | None = None) -> None:
        self.steps: list[Step] = list(steps or [])
        self.completions: list[ChatResult | BaseException] = []
        self.distill: list[str] = []
        self.stream_requests: list[dict[str, Any]] = []
        self.complete_requests: list[dict[str, Any]] = []
        self.distill_requests: list[dict[str, Any]] = []
        self.distilled = threading.Event()
        self._lock = threading.Lock()

    def stream(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        *,
        model: str | None = None,
        cancel: CancelToken | None = None,
    ) -> Iterator[StreamItem | ChatResult]:
        default = text("(script exhausted)")
        step = self._take(self.stream_requests, self.steps, default, messages, tools, model)
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, ChatResult):
            for start in range(0, len(step.content), 4):
                yield TextDelta(step.content[start : start + 4])
            yield step
            return
        yield from step(messages, cancel or CancelToken())

    def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        *,
        model: str | None = None,
        cancel: CancelToken | None = None,
    ) -> ChatResult:
        if messages and messages[0].get("content") == DISTILL_SYSTEM_PROMPT:
            answer = self._take(self.distill_requests, self.distill, "[]", messages, tools, model)
            self.distilled.set()
            return text(answer)
        default = text("(no completion scripted)")
        step = self._take(self.complete_requests, self.completions, default, messages, tools, model)
        if isinstance(step, BaseException):
            raise step
        return step

    def _take(
        self,
        log: list[dict[str, Any]],
        queue: list[T],
        default: T,
        messages: list[Message],
        tools: list[dict[str, Any]] | None,
        model: str | None,
    ) -> T:
        """Record the request in `log` and pop the next scripted answer from `queue` (else `default`)."""
        with self._lock:
            log.append({"messages": copy.deepcopy(messages), "tools": tools, "model": model})
            return queue.pop(0) if queue else default


def assert_valid_history(messages: list[Message]) -> None:
    """Every tool call id gets exactly one result right after its assistant message, in call order;
    no tool message without a call."""
    assert messages[0]["role"] == "system"
    index = 1
    while index < len(messages):
        message = messages[index]
        assert message["role"] != "tool", f"orphan tool result at {index}"
        ids = [call["id"] for call in message.get("tool_calls") or ()]
        results = [m.get("tool_call_id") for m in messages[index + 1 : index + 1 + len(ids)]]
        assert results == ids, f"results {results} do not answer calls {ids} at {index}"
        index += 1 + len(ids)
