"""The real REPL in a pseudo-terminal, fed text no terminal should take literally: a reply with a lone
surrogate, a session path that looks like rich markup.

Every expect is bounded; helpers and fixtures come from test_ui_pty.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_server import FakeServer
from fake_server import fake_server as fake_server
from test_ui_pty import Launch, launch, plain
from test_ui_pty import workspace as workspace

pytestmark = pytest.mark.pty
_ = launch  # the fixture, imported for pytest


def test_a_lone_surrogate_in_a_reply_is_shown_and_the_repl_goes_on(
    fake_server: FakeServer, launch: Launch
) -> None:
    """A JSON `"\\ud800"` escape in a reply ended the REPL: `internal error: UnicodeEncodeError`."""
    fake_server.push_text("before \ud800 after")
    term = launch("--no-memory")
    term.send("hi\r")
    term.expect("before \\ud800 after")
    term.prompt()
    term.send("/tokens\r")
    term.expect("tokens so far")
    term.prompt()
    assert "UnicodeEncodeError" not in plain(term.log.getvalue())
    term.send("\x04")
    assert term.exit_code() == 0


def test_a_session_path_that_looks_like_markup_gets_its_resume_hint(
    fake_server: FakeServer, workspace: Path, launch: Launch
) -> None:
    """`--session 'a[/b]x.json'`: the farewell line parsed the path as rich markup, raised MarkupError
    and exited 1 without saying how to resume."""
    fake_server.push_text("Fine.")
    path = workspace / "a[/b]x.json"
    term = launch("--no-memory", "--session", str(path))
    term.send("hi\r")
    term.expect("Fine.")
    term.prompt()
    term.send("\x04")
    farewell = "".join(term.expect("latest session in this directory").split())  # unwrapped
    assert f"Resumeitwith:nanohermes--session'{path}'" in farewell
    assert term.exit_code() == 0
    assert path.is_file()
