"""The input line driven through a prompt_toolkit pipe: multi-line keys, paste, Ctrl-C rules, completion."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText, to_plain_text
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput

from nanohermes.ui.commands import COMMANDS
from nanohermes.ui.prompt import (
    ExitRequested,
    ExitWindow,
    ReplCompleter,
    key_bindings,
    make_session,
    toolbar_text,
)

PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"


@pytest.fixture
def pipe() -> Iterator[PipeInput]:
    with create_pipe_input() as pipe_input:
        yield pipe_input


def session(pipe: PipeInput, tmp_path: Path, window: ExitWindow | None = None) -> PromptSession[str]:
    completer = ReplCompleter(COMMANDS, {}, tmp_path)
    return make_session(
        tmp_path / "state" / "history",
        completer,
        lambda: FormattedText([("", "toolbar")]),
        key_bindings(window or ExitWindow()),
        input=pipe,
        output=DummyOutput(),
    )


def test_enter_sends_and_history_persists(pipe: PipeInput, tmp_path: Path) -> None:
    pipe.send_text("hello there\r")
    assert session(pipe, tmp_path).prompt("> ") == "hello there"
    history = tmp_path / "state" / "history"
    assert "hello there" in history.read_text()
    assert history.stat().st_mode & 0o777 == 0o600


def test_escape_enter_inserts_a_newline(pipe: PipeInput, tmp_path: Path) -> None:
    pipe.send_text("line one\x1b\rline two\r")
    assert session(pipe, tmp_path).prompt("> ") == "line one\nline two"


def test_bracketed_paste_keeps_newlines(pipe: PipeInput, tmp_path: Path) -> None:
    pipe.send_text(f"look:{PASTE_START}def f():\r\n    return 1\n{PASTE_END}\r")
    assert session(pipe, tmp_path).prompt("> ") == "look:def f():\n    return 1\n"


def test_ctrl_c_clears_a_line_then_twice_on_empty_exits(pipe: PipeInput, tmp_path: Path) -> None:
    window = ExitWindow()
    prompt = session(pipe, tmp_path, window)
    pipe.send_text("draft\x03kept\r")
    assert prompt.prompt("> ") == "kept"
    assert not window.is_open()
    pipe.send_text("\x03\x03")
    with pytest.raises(ExitRequested):
        prompt.prompt("> ")


def test_a_new_prompt_closes_the_exit_window(pipe: PipeInput, tmp_path: Path) -> None:
    window = ExitWindow()
    prompt = session(pipe, tmp_path, window)
    pipe.send_text("\x03quick message\r")
    assert prompt.prompt("> ") == "quick message"
    assert window.is_open()
    pipe.send_text("\x03next\r")  # within 2 s, but at a new prompt: a first Ctrl-C again
    assert prompt.prompt("> ", pre_run=window.close) == "next"
    assert window.is_open()


def test_ctrl_d_on_empty_line_ends_input(pipe: PipeInput, tmp_path: Path) -> None:
    pipe.send_text("\x04")
    with pytest.raises(EOFError):
        session(pipe, tmp_path).prompt("> ")


def completions(completer: ReplCompleter, text: str) -> list[str]:
    found = completer.get_completions(Document(text), CompleteEvent(completion_requested=True))
    return [c.text for c in found]


def test_completion_of_commands_arguments_and_paths(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("")
    (tmp_path / "setup.cfg").write_text("")
    (tmp_path / ".hidden").write_text("")
    completer = ReplCompleter(COMMANDS, {"/permission": ("read-only", "ask", "auto")}, tmp_path)
    assert completions(completer, "/se") == ["/session", "/sessions"]
    assert completions(completer, "/permission a") == ["ask", "auto"]
    assert completions(completer, "look at @s") == ["setup.cfg", "src/"]
    assert completions(completer, "look at @src/a") == ["app.py"]
    assert completions(completer, "look at @") == ["setup.cfg", "src/"]
    assert completions(completer, "@.h") == [".hidden"]
    assert completions(completer, "@nowhere/x") == []
    assert completions(completer, "plain words") == []


def test_a_path_completion_shows_escapes_and_bidi_overrides_as_text(tmp_path: Path) -> None:
    """The completion menu printed file names raw: `\u202e` reordered what was shown (Trojan
    Source) and an escape sequence reached the terminal. The text inserted stays the real name."""
    for name in ("invoice\u202etxt.exe", "a\x1b]0;title\x07b"):
        (tmp_path / name).write_text("")
    completer = ReplCompleter(COMMANDS, {}, tmp_path)
    found = list(completer.get_completions(Document("@"), CompleteEvent(completion_requested=True)))
    assert sorted(c.text for c in found) == sorted(["invoice\u202etxt.exe", "a\x1b]0;title\x07b"])
    shown = sorted(to_plain_text(c.display) for c in found)
    assert shown == ["a\\x1b]0;title\\x07b", "invoice\\u202etxt.exe"]


def test_toolbar_shows_model_permission_session_and_fill() -> None:
    text = to_plain_text(toolbar_text("gpt-4o", "ask", "work", 42, "Ctrl-C again to exit"))
    for part in ("gpt-4o", "ask", "work", "context 42%", "Ctrl-C again to exit"):
        assert part in text
