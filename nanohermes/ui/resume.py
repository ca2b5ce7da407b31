"""What a resumed REPL shows of the conversation: the last few exchanges, one dimmed line each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nanohermes.core.types import Message, message_text, shorten
from nanohermes.ui.safe_text import terminal_safe

EXCHANGES_SHOWN = 3


@dataclass(frozen=True)
class Exchange:
    """One user message and the reply it got ("" when none came)."""

    question: str
    answer: str


def recent_exchanges(messages: Sequence[Message], count: int = EXCHANGES_SHOWN) -> list[Exchange]:
    """The last `count` user messages, each with the last assistant text that followed it (a reply
    that only called tools names them)."""
    exchanges: list[Exchange] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            exchanges.append(Exchange(message_text(message), ""))
        elif role == "assistant" and exchanges:
            answer = message_text(message).strip() or _tools_called(message)
            if answer:
                exchanges[-1] = Exchange(exchanges[-1].question, answer)
    return exchanges[-count:] if count > 0 else []


def exchange_lines(exchanges: Sequence[Exchange], width: int) -> list[str]:
    """`you  …` / `  →  …` lines, each shortened to `width` characters. The texts come from the session
    file (model replies, pasted text): escape sequences in them are shown, never sent to the terminal."""
    lines: list[str] = []
    for exchange in exchanges:
        lines.append(shorten(terminal_safe(f"you: {exchange.question}"), width))
        if exchange.answer:
            lines.append(shorten(terminal_safe(f"  → {exchange.answer}"), width))
    return lines


def _tools_called(message: Message) -> str:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return ""
    names = [c.get("function", {}).get("name", "") for c in calls if isinstance(c, dict)]
    named = [n for n in names if isinstance(n, str) and n]
    return f"(called {', '.join(named)})" if named else ""
