"""The real REPL in a pseudo-terminal, driven the way a hurried user drives it: typing ahead while a
turn streams, answering an approval with a word, pasting hostile text.

Every expect is bounded; helpers and fixtures come from test_ui_pty.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_server import FakeServer
from fake_server import fake_server as fake_server
from test_ui_pty import Launch, launch, user_texts
from test_ui_pty import workspace as workspace

from nanohermes.core.types import message_text

pytestmark = pytest.mark.pty
_ = launch  # the fixture, imported for pytest


def _slow_write_call(path: str) -> list[str]:
    """SSE: a few slow words, then one write_file call (time for the user to type ahead)."""
    words = [{"choices": [{"index": 0, "delta": {"content": "planning the change "}}]}] * 8
    arguments = json.dumps({"path": path, "content": "x\n"})
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "write_file"}}
    call["function"]["arguments"] = arguments
    last = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": "tool_calls"}]}
    return [*(json.dumps(w) for w in words), json.dumps(last), "[DONE]"]


def test_keys_typed_ahead_during_a_turn_never_answer_the_approval(
    fake_server: FakeServer, workspace: Path, launch: Launch
) -> None:
    fake_server.push_sse([f"data: {chunk}" for chunk in _slow_write_call("notes.txt")], delay=0.1)
    fake_server.push_text("Not written, as you said.")
    term = launch("--no-memory", "--permission", "ask")
    term.send("write the notes\r")
    term.expect("planning the change")
    term.send("and then more")  # typed ahead while the model streams: an «a» is not «always»
    term.expect("Allow?")
    term.send("n")
    term.expect("Not written, as you said.")
    term.prompt()
    assert not (workspace / "notes.txt").exists()
    tool_results = [m for m in fake_server.bodies[1]["messages"] if m["role"] == "tool"]
    assert "declined" in message_text(tool_results[-1])
    term.expect("and then more")  # the typed-ahead text is kept for the next prompt, not lost
    term.send("\x15\x04")
    assert term.exit_code() == 0


def test_an_approval_answered_with_a_word_and_enter_sends_no_stray_message(
    fake_server: FakeServer, workspace: Path, launch: Launch
) -> None:
    fake_server.push_tool_calls([("write_file", {"path": "notes.txt", "content": "yes text\n"})])
    fake_server.push_text("Written.")
    term = launch("--no-memory", "--permission", "ask")
    term.send("write the notes\r")
    term.expect("Allow?")
    term.send("yes\r")  # «y» answers; «es⏎» must not become a message of its own
    term.expect("Written.")
    term.prompt()
    term.send("/tokens\r")  # a command round trip: any stray turn would have been sent before it
    term.expect("/tokens")
    term.prompt()
    term.send("\x04")
    assert term.exit_code() == 0
    assert (workspace / "notes.txt").read_text() == "yes text\n"
    assert [user_texts(body)[-1] for body in fake_server.bodies] == ["write the notes"] * 2


def test_ctrl_d_at_an_approval_answers_no(fake_server: FakeServer, workspace: Path, launch: Launch) -> None:
    fake_server.push_tool_calls([("write_file", {"path": "notes.txt", "content": "x\n"})])
    fake_server.push_text("Not written.")
    term = launch("--no-memory", "--permission", "ask")
    term.send("write the notes\r")
    term.expect("Allow?")
    term.send("\x04")  # Ctrl-D at the question: no, like Esc (it used to keep waiting)
    term.expect("Not written.")
    term.prompt()
    term.send("\x04")
    assert term.exit_code() == 0
    assert not (workspace / "notes.txt").exists()
    tool_results = [m for m in fake_server.bodies[1]["messages"] if m["role"] == "tool"]
    assert "declined" in message_text(tool_results[-1])


def test_ctrl_c_at_an_approval_interrupts_every_call_of_the_reply(
    fake_server: FakeServer, workspace: Path, launch: Launch
) -> None:
    writes = [("write_file", {"path": name, "content": "x\n"}) for name in ("a.txt", "b.txt")]
    fake_server.push_tool_calls(writes)
    fake_server.push_text("Fine.")
    term = launch("--no-memory", "--permission", "ask")
    term.send("write both\r")
    term.expect("Allow?")
    term.send("\x03")  # Ctrl-C: the asked call and the one never asked are interrupted, not declined
    term.prompt()
    term.send("go on\r")
    term.expect("Fine.")
    term.prompt()
    term.send("\x04")
    assert term.exit_code() == 0
    assert not (workspace / "a.txt").exists()
    assert not (workspace / "b.txt").exists()
    tool_results = [message_text(m) for m in fake_server.bodies[1]["messages"] if m["role"] == "tool"]
    assert tool_results == ["interrupted by user"] * 2
