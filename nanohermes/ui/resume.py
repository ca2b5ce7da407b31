"""What a resumed REPL shows of the conversation: the last few exchanges, one dimmed line each."""

from __future__ import annotations

from collections.abc import Sequence

from nanohermes.core.types import Message, message_text, shorten
from nanohermes.ui.safe_text import terminal_safe

EXCHANGES_SHOWN = 3


def exchange_lines(messages: Sequence[Message], width: int) -> list[str]:
    """`you: …` / `→ …` lines, each shortened to `width` characters, for the last user messages, each
    with the last assistant text that followed it (a reply that only called tools names them). The
    texts come from the session file (model replies, pasted text): escape sequences in them are shown,
    never sent to the terminal."""
    exchanges: list[tuple[str, str]] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            exchanges.append((message_text(message), ""))
        elif role == "assistant" and exchanges:
            answer = message_text(message).strip() or _tools_called(message)
            if answer:
                exchanges[-1] = (exchanges[-1][0], answer)
    lines: list[str] = []
    for question, answer in exchanges[-EXCHANGES_SHOWN:]:
        lines.append(shorten(terminal_safe(f"you: {question}"), width))
        if answer:
            lines.append(shorten(terminal_safe(f"  → {answer}"), width))
    return lines


def _tools_called(message: Message) -> str:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return ""
    names = [c.get("function", {}).get("name", "") for c in calls if isinstance(c, dict)]
    named = [n for n in names if isinstance(n, str) and n]
    return f"(called {', '.join(named)})" if named else ""
