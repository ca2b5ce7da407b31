"""What a resumed REPL shows of the conversation (nanohermes.ui.repl)."""

from __future__ import annotations

from nanohermes.core.types import Message
from nanohermes.ui.repl import exchange_lines


def test_escape_sequences_from_the_session_file_are_shown_not_sent() -> None:
    messages: list[Message] = [
        {"role": "user", "content": "hi \x1b]0;retitled\x07 there"},
        {"role": "assistant", "content": "done \x1b[2J\x9b31m"},
    ]
    lines = exchange_lines(messages, 200)
    assert lines == ["you: hi \\x1b]0;retitled\\x07 there", "→ done \\x1b[2J\\x9b31m"]
    assert not any(ch in line for line in lines for ch in "\x1b\x07\x9b")


def test_a_reply_that_only_called_tools_names_them() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    messages: list[Message] = [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    assert exchange_lines(messages, 80) == ["you: look", "→ (called read_file)"]
