"""The steps of a turn, shared by the agent and its sub-agents: model calls, compaction (also on a
context overflow, then one call more), tool calls, until a reply without calls raises TurnOver."""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from nanohermes.agent.compaction import compact, summary_request, total_chars
from nanohermes.agent.plan import plan_updates
from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import (
    CAPACITY_NOTE,
    FILTER_NOTE,
    INTERRUPTED,
    JSON_ERRORS,
    LENGTH_NOTE,
    Cancelled,
    ContextOverflow,
    LLMError,
)
from nanohermes.core.events import Compacted, Event, Note, TextDelta, ToolFinished
from nanohermes.core.types import ChatResult, Message, ToolCall, ToolResult, Usage, shown_images
from nanohermes.llm import ChatClient, extract_text_tool_calls

if TYPE_CHECKING:
    from nanohermes.config.settings import Settings

CUT_SHORT = frozenset({"length", "insufficient_system_resource"})
"""Finish reasons of a reply stopped mid-way, so a tool call may be cut mid-arguments (the second is
DeepSeek's, for lack of capacity on its side)."""
MAX_CALLS_PER_REPLY = 64
UNREADABLE_CALL = "the model wrote a <tool_call> that could not be read"
NOTHING_TO_COMPACT_HINT = (
    "the recent messages alone do not fit: /reset or a new session, or lower compact_keep_messages"
)


class TurnOver(Exception):
    """An early (or normal) exit from the loop, caught in one place in `run_steps`."""

    def __init__(self, completed: bool, reason: str, note: Note | None = None, answer: str = "") -> None:
        super().__init__(reason)
        self.completed, self.reason, self.note, self.answer = completed, reason, note, answer


def drop_cut_calls(result: ChatResult) -> str:
    """Drop the calls never to run and return a note, or "": when cut short, those cut mid-arguments;
    after `content_filter`, all (not what the model meant to send); past MAX_CALLS_PER_REPLY, the rest."""
    if result.finish_reason == "content_filter" and result.tool_calls:
        dropped = len(result.tool_calls)
        result.tool_calls = []
        return f"{dropped} tool call(s) in a reply stopped by the provider's content filter were not run"
    cut = ""
    if result.finish_reason in CUT_SHORT:
        kept = [call for call in result.tool_calls if _complete_arguments(call.arguments)]
        dropped = len(result.tool_calls) - len(kept)
        result.tool_calls = kept
        by = "the output-token cap" if result.finish_reason == "length" else "the provider"
        cut = f"{dropped} tool call(s) cut by {by} were not run" if dropped else ""
    return "; ".join(note for note in (cut, _drop_excess_calls(result)) if note)


def _drop_excess_calls(result: ChatResult) -> str:
    """A reply of 10,000 calls (a looping model, a hostile endpoint) would ask 10,000 approvals and
    put every result in each later request; the reply's text says what was dropped, for the model."""
    count = len(result.tool_calls)
    if count <= MAX_CALLS_PER_REPLY:
        return ""
    result.tool_calls = result.tool_calls[:MAX_CALLS_PER_REPLY]
    rest = count - MAX_CALLS_PER_REPLY
    marker = (
        f"[{rest:,} more tool calls of this reply were not run: at most {MAX_CALLS_PER_REPLY} run per reply]"
    )
    result.content = f"{result.content.rstrip()}\n\n{marker}" if result.content.strip() else marker
    return f"the model asked for {count:,} tool calls in one reply; only the first {MAX_CALLS_PER_REPLY} ran"


def _complete_arguments(text: str) -> bool:
    try:
        return isinstance(json.loads(text or "{}"), dict)
    except JSON_ERRORS:
        return False


def reply_over(result: ChatResult) -> TurnOver:
    """How a reply without tool calls ends the turn: an answer, a refusal, or an answer cut short."""
    if result.refusal and not result.content.strip():
        return TurnOver(False, "refusal", Note("the model refused to answer", "error"), result.refusal)
    if result.finish_reason == "length":
        return TurnOver(False, "length", Note(LENGTH_NOTE, "error"), result.content)
    if result.finish_reason == "content_filter":
        return TurnOver(False, "refusal", Note(FILTER_NOTE, "error"), result.content)
    if result.finish_reason == "insufficient_system_resource":
        return TurnOver(False, "error", Note(CAPACITY_NOTE, "error"), result.content)
    return TurnOver(True, "done", answer=result.content)


@dataclass
class Turn:
    user_message: Message
    had_tools: bool = False
    usage: Usage = field(default_factory=Usage)
    partial: list[str] | None = None  # text streamed by the current model call; None: no call under way


class ToolSet(Protocol):
    """What the steps use of a `ToolRunner` (a sub-agent gets a restricted view of its parent's)."""

    def names(self) -> set[str]: ...

    def schemas(self) -> list[dict[str, Any]]: ...

    def run_calls(self, calls: list[ToolCall], cancel: CancelToken) -> Iterator[Event]: ...


class Steps:
    """One conversation's model calls, compactions and tool calls (SPEC §4.1-4.3). Whatever happens,
    the history stays valid: every tool call gets a result and an interrupted reply is kept, marked."""

    def __init__(
        self,
        model: ChatClient,
        tools: ToolSet,
        config: Settings,
        messages: list[Message],
        *,
        add_usage: Callable[[Usage], None],
        archive: list[Message] | None = None,
        pinned: int = 1,
    ) -> None:
        """`archive` gets what compaction takes out; `pinned` leading messages are never compacted
        (the system prompt, and a sub-agent's task)."""
        self._model, self._tools, self._config = model, tools, config
        self.model = config.model or ""
        self.messages = messages
        self._count_usage = add_usage
        self._archive = [] if archive is None else archive
        self._pinned = pinned

    def run_steps(self, turn: Turn, cancel: CancelToken) -> Generator[Event, None, TurnOver]:
        try:
            for _ in range(self._config.max_iterations):
                yield from self._step(turn, cancel)
            limit = self._config.max_iterations
            raise TurnOver(False, "max_iterations", Note(f"stopped after {limit} model calls", "warning"))
        except TurnOver as over:
            return over
        except Cancelled:
            self._interrupt(turn)
            return TurnOver(False, "interrupted", Note(INTERRUPTED, "warning"))
        except LLMError as err:
            turn.partial = None
            return TurnOver(False, "error", Note(err.one_line(), "error"))

    def _step(self, turn: Turn, cancel: CancelToken) -> Iterator[Event]:
        if total_chars(self.messages) > self._config.compact_threshold_chars:
            yield from self._compact(cancel, threshold=self._config.compact_threshold_chars)
        result = yield from self._call_model(turn, cancel)
        if not result.tool_calls and result.content:
            result.content, result.tool_calls = extract_text_tool_calls(result.content, self._tools.names())
            if not result.tool_calls and "<tool_call>" in result.content:
                yield Note(f"{UNREADABLE_CALL} (not valid JSON, or no such tool); nothing was run", "warning")
        dropped = drop_cut_calls(result)
        self.messages.append(result.to_message())
        turn.partial = None
        if dropped:
            yield Note(dropped, "warning")
        if not result.tool_calls:
            raise reply_over(result)
        turn.had_tools = True
        yield from self._run_tools(result.tool_calls, cancel)
        cancel.raise_if_cancelled()

    def _call_model(self, turn: Turn, cancel: CancelToken) -> Generator[Event, None, ChatResult]:
        try:
            return (yield from self._request(turn, cancel))
        except ContextOverflow as err:
            compacted = yield from self._compact(cancel, threshold=None)
            if not compacted:  # "run /compact" would not help either
                err.hint = NOTHING_TO_COMPACT_HINT
                raise
            return (yield from self._request(turn, cancel))

    def _request(self, turn: Turn, cancel: CancelToken) -> Generator[Event, None, ChatResult]:
        turn.partial = []
        tools = self._tools.schemas() or None
        streamed: ChatResult | None = None
        for item in self._model.stream(self.messages, tools, model=self.model, cancel=cancel):
            if isinstance(item, ChatResult):
                streamed = item
                continue
            if isinstance(item, TextDelta):
                turn.partial.append(item.text)
            yield item
        assert streamed is not None, "ChatClient.stream ends with a ChatResult or raises"
        self._count_usage(streamed.counted_usage(self.messages, tools))
        return streamed

    def _run_tools(self, calls: list[ToolCall], cancel: CancelToken) -> Iterator[Event]:
        results: list[ToolResult] = []
        try:
            for event in self._tools.run_calls(calls, cancel):
                if isinstance(event, ToolFinished):
                    results.append(event.result)
                yield event
                if isinstance(event, ToolFinished):
                    yield from plan_updates(calls[len(results) - 1], event.result)
        finally:
            unanswered = [ToolResult(c.id, c.name, INTERRUPTED, ok=False) for c in calls[len(results) :]]
            for call, result in zip(calls, results + unanswered, strict=False):
                self.messages.append({**result.to_message(), "tool_call_id": call.id})
            self.messages.extend(shown_images(results))

    def _interrupt(self, turn: Turn) -> None:
        if turn.partial is None:
            return
        text = "".join(turn.partial).rstrip()
        turn.partial = None
        marker = f"[{INTERRUPTED}]"
        self.messages.append({"role": "assistant", "content": f"{text}\n\n{marker}" if text else marker})

    def _compact(self, cancel: CancelToken, *, threshold: int | None) -> Generator[Event, None, bool]:
        def summarize(middle: list[Message]) -> str:
            request = summary_request(middle)
            result = self._model.complete(request, None, model=self.model, cancel=cancel)
            self._count_usage(result.counted_usage(request))
            return result.content

        keep, head = self._config.compact_keep_messages, self._pinned
        outcome = compact(self.messages, keep=keep, summarize=summarize, threshold=threshold, head=head)
        if outcome is None:
            return False
        self.messages[:] = outcome.messages
        self._archive.extend(outcome.removed)
        if outcome.note:
            yield Note(outcome.note, "warning")
        yield Compacted(outcome.before_chars, outcome.after_chars, outcome.summarized)
        return True
