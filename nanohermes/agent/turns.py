"""What one turn of the agent loop carries, and how a reply ends it (kept beside `nanohermes.agent.loop` so
the loop itself stays on one screen)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

from nanohermes.core.errors import CAPACITY_NOTE, FILTER_NOTE, JSON_ERRORS, LENGTH_NOTE
from nanohermes.core.events import Event, Note
from nanohermes.core.protocols import TurnChanges
from nanohermes.core.types import ChatResult, Message, Usage, plural

CUT_SHORT = frozenset({"length", "insufficient_system_resource"})
"""Finish reasons of a reply stopped mid-way: a tool call in it may be cut mid-arguments. DeepSeek
documents `insufficient_system_resource`: «the request is interrupted due to insufficient resource of
the inference system»."""
MAX_CALLS_PER_REPLY = 64
"""Tool calls run from one reply; the rest are dropped (`drop_cut_calls`)."""


class TurnOver(Exception):
    """An early (or normal) exit from the loop, caught in one place in `run`."""

    def __init__(self, completed: bool, reason: str, note: Note | None = None, answer: str = "") -> None:
        super().__init__(reason)
        self.completed, self.reason, self.note, self.answer = completed, reason, note, answer


def drop_cut_calls(result: ChatResult) -> str:
    """Tool calls never to run, dropped from `result`: with `finish_reason: length` those cut
    mid-arguments (not a complete JSON object); with `content_filter` all of them (the provider
    stopped the reply: what it holds is not what the model meant to send); past the first
    MAX_CALLS_PER_REPLY, the rest (the reply's text then says so, for the model). Returns a note, or ""."""
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
    """Keep the first MAX_CALLS_PER_REPLY calls: a reply of 10,000 calls (a looping model, a
    hostile endpoint) would run 10,000 tools, ask 10,000 approvals in `ask` mode, and put every
    result in the history that each later request sends."""
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
    partial: list[str] | None = None
    """Text streamed so far by the current model call; None when no call is streaming."""


def checkpoint_notes(changes: TurnChanges) -> Iterator[Event]:
    for line in changes.notes:
        yield Note(line, "warning")
    if changes.files:
        count = len(changes.files)
        shown = ", ".join(changes.files[:5]) + (f" and {count - 5} more" if count > 5 else "")
        yield Note(f"checkpoint {changes.turn}: {plural(count, 'file')} changed ({shown})")


def messages_of_turn(messages: list[Message], user_message: Message) -> list[Message]:
    """A turn's messages from its user message on. When a compaction during the turn took that
    message out of the live context, it goes back in front of what is left after the summary at
    index 1: what the distiller reads must start with what the user said, not with the summary."""
    start = next((i for i, m in enumerate(messages) if m is user_message), None)
    if start is not None:
        return list(messages[start:])
    return [user_message, *messages[2:]]
