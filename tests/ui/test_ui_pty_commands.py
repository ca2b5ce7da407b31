"""The real REPL in a pseudo-terminal: custom slash commands (`.nanohermes/commands/NAME.md`) are
completed by Tab, listed by /help and sent as their expanded body; a clash with a built-in is noted.
Helpers and fixtures come from test_ui_pty."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_server import FakeServer
from fake_server import fake_server as fake_server
from test_ui_pty import Launch, launch, plain, user_texts
from test_ui_pty import workspace as workspace

pytestmark = pytest.mark.pty
_ = launch  # the fixture, imported for pytest


def test_tab_completes_a_custom_command_and_enter_sends_its_body(
    fake_server: FakeServer, workspace: Path, launch: Launch
) -> None:
    commands = workspace / ".nanohermes" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: Review one file\n---\nReview $1 carefully.\n")
    (commands / "exit.md").write_text("not the built-in")
    fake_server.push_text("Reviewed.")
    term = launch("--no-memory")
    banner = "".join(plain(term.log.getvalue()).split())  # the note wraps at the terminal's width
    assert "exit.mdskipped:/exitisabuilt-incommand" in banner
    term.send("/help\r")
    shown = term.expect("Ctrl-D exits")
    assert "/review" in shown
    assert "Review one file" in shown
    term.prompt()
    term.send("/rev")
    term.expect("/review")  # the completion menu
    term.send("\t")
    term.send(" src/a.py\r")
    term.expect("Reviewed.")
    term.prompt()
    assert user_texts(fake_server.bodies[0])[-1] == "Review src/a.py carefully."
    term.send("\x04")
    assert term.exit_code() == 0
