"""The real `nanohermes` REPL in a pseudo-terminal (pexpect) against the fake server on loopback.

Every expect is bounded; on failure the assertion shows the tail of what the terminal received.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pytest
from fake_server import FakeServer
from fake_server import fake_server as fake_server
from ui_fakes import SPEC_COMMANDS

from nanohermes.core.types import message_text

pytestmark = pytest.mark.pty

PROMPT = "❯"
WAIT = 30  # generous: a bound on a loaded machine, not a delay (expects end as soon as the text arrives)
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")


def plain(text: str) -> str:
    return ANSI.sub("", text)


def spawn(workspace: Path, args: tuple[str, ...], env: dict[str, str]) -> pexpect.spawn:
    """The installed `nanohermes` in a 40×100 pty, started in `workspace`."""
    return pexpect.spawn(
        str(Path(sys.executable).with_name("nanohermes")),
        list(args),
        env=env,
        cwd=str(workspace),
        encoding="utf-8",
        dimensions=(40, 100),
        timeout=WAIT,
    )


def server_env(server: FakeServer) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        NANOHERMES_MODEL="fake-model",
        NANOHERMES_BASE_URL=server.url,
        NANOHERMES_API_KEY="test-key",
        TERM="xterm-256color",
        COLUMNS="100",
        LINES="40",
        PROMPT_TOOLKIT_NO_CPR="1",  # pexpect never answers cursor-position requests
    )
    return env


class Terminal:
    """One `nanohermes` process in a pty, with its whole output kept for diagnostics."""

    def __init__(self, workspace: Path, args: tuple[str, ...], env: dict[str, str]) -> None:
        self.log = io.StringIO()
        self.child = spawn(workspace, args, env)
        self.child.logfile_read = self.log

    def expect(self, pattern: str, timeout: float = WAIT) -> str:
        """Wait for a literal text; returns the plain text received before it."""
        try:
            self.child.expect_exact(pattern, timeout=timeout)
        except (pexpect.TIMEOUT, pexpect.EOF):
            tail = plain(self.log.getvalue())[-1500:]
            pytest.fail(f"did not see {pattern!r} within {timeout}s; terminal tail:\n{tail}")
        return plain(self.child.before or "")

    def prompt(self) -> None:
        self.expect(PROMPT)

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def exit_code(self, timeout: float = WAIT) -> int:
        self.child.expect(pexpect.EOF, timeout=timeout)
        self.child.close()
        assert self.child.exitstatus is not None, self.child.signalstatus
        return int(self.child.exitstatus)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


Launch = Callable[..., Terminal]


@pytest.fixture
def launch(fake_server: FakeServer, workspace: Path) -> Iterator[Launch]:
    """`launch(*args)`: `nanohermes *args` against the fake server, once its prompt is drawn."""
    opened: list[Terminal] = []

    def start(*args: str) -> Terminal:
        terminal = Terminal(workspace, args, server_env(fake_server))
        opened.append(terminal)
        terminal.prompt()
        return terminal

    yield start
    for terminal in opened:
        terminal.close()


def user_texts(body: dict[str, object]) -> list[str]:
    messages = body["messages"]
    assert isinstance(messages, list)
    return [message_text(m) for m in messages if m.get("role") == "user"]


def test_chat_turn_renders_markdown_and_returns_to_the_prompt(
    fake_server: FakeServer,
    launch: Launch,
) -> None:
    fake_server.push_text("Here is **the plan**:\n\n```python\nprint('hi')\n```\nDone here.")
    term = launch("--no-memory")
    term.send("hello\r")
    term.expect("Done here.")
    term.prompt()  # the turn is over: every block is printed for good, whatever the live region showed
    # While streaming, the live region may show an unclosed `**the pl` (more frames on a loaded
    # machine); what Markdown never shows is the closed raw markup, in any frame or the final text.
    everything = plain(term.log.getvalue())
    assert "Here is the plan:" in everything  # the bold markers became a style
    assert "**the plan**" not in everything
    assert "print('hi')" in everything
    assert "```python" not in everything  # a code block, not its fence
    assert user_texts(fake_server.bodies[0])[-1] == "hello"
    term.send("/exit\r")
    assert term.exit_code() == 0


def test_ctrl_c_cancels_a_slow_stream_and_the_next_turn_keeps_history(
    fake_server: FakeServer,
    launch: Launch,
) -> None:
    fake_server.push_text("Once upon a time " + "and then more " * 300, delay=0.05)
    fake_server.push_text("Second answer.")
    term = launch("--no-memory")
    term.send("tell a story\r")
    term.expect("Once upon")
    term.send("\x03")
    term.expect("interrupted by user", timeout=5)
    term.prompt()
    term.send("and now?\r")
    term.expect("Second answer.")
    term.prompt()
    second = fake_server.bodies[1]["messages"]
    roles = [m["role"] for m in second]
    assert user_texts(fake_server.bodies[1])[-2:] == ["tell a story", "and now?"]
    assert roles[-3:] == ["user", "assistant", "user"]
    assert message_text(second[-2]).startswith("Once upon a time")
    term.send("\x04")
    assert term.exit_code() == 0


def test_ctrl_d_exits_zero_and_the_autosaved_session_resumes(fake_server: FakeServer, launch: Launch) -> None:
    fake_server.push_text("Noted, blue.")
    term = launch()
    term.send("my color: blue\r")
    term.expect("Noted, blue.")
    term.prompt()
    term.send("\x04")
    farewell = term.expect("\n", timeout=WAIT) + term.child.read()
    assert term.exit_code() == 0
    match = re.search(r"nanohermes --session (\S+)", plain(farewell))
    assert match, farewell
    name = match.group(1)
    fake_server.push_text("You said blue.")
    again = launch("--session", name)
    assert "2 messages" in plain(again.log.getvalue())
    again.send("which color?\r")
    again.expect("You said blue.")
    again.prompt()
    last_chat = [b for b in fake_server.bodies if user_texts(b)[-1:] == ["which color?"]][0]
    assert user_texts(last_chat)[-2:] == ["my color: blue", "which color?"]
    again.send("\x04")
    assert again.exit_code() == 0


def test_the_plan_is_a_checklist_shown_again_at_each_update(fake_server: FakeServer, launch: Launch) -> None:
    steps = ["read the code", "fix the bug", "run the tests"]
    statuses = ["completed", "in_progress", "pending"]
    first = [{"step": s, "status": st} for s, st in zip(steps, statuses, strict=True)]
    fake_server.push_tool_calls([("update_plan", {"plan": first})], text="Planning.")
    fake_server.push_tool_calls(
        [("update_plan", {"plan": [{"step": s, "status": "completed"} for s in steps]})]
    )
    fake_server.push_text("All done.")
    term = launch("--no-memory")
    term.send("fix it\r")
    shown = term.expect("All done.")
    term.prompt()
    checklists = re.findall(r"([☑◐☐]) (read the code|fix the bug|run the tests)", shown)
    assert checklists == [
        ("☑", "read the code"),
        ("◐", "fix the bug"),
        ("☐", "run the tests"),
        ("☑", "read the code"),
        ("☑", "fix the bug"),
        ("☑", "run the tests"),
    ]
    term.send("\x04")
    assert term.exit_code() == 0


def test_help_lists_every_command(launch: Launch) -> None:
    term = launch("--no-memory")
    term.send("/help\r")
    shown = term.expect("Ctrl-D exits")
    for command in SPEC_COMMANDS:
        assert command in shown
    assert "checklist: ☑ done · ◐ doing · ☐ to do" in shown
    term.prompt()
    term.send("\x03")
    term.send("\x03")
    assert term.exit_code() == 0


def test_approval_answered_no_then_yes(fake_server: FakeServer, workspace: Path, launch: Launch) -> None:
    write = ("write_file", {"path": "notes.txt", "content": "approved text\n"})
    fake_server.push_tool_calls([write])
    fake_server.push_text("Understood, not written.")
    fake_server.push_tool_calls([write])
    fake_server.push_text("Written.")
    term = launch("--no-memory", "--permission", "ask")
    term.send("write the notes\r")
    shown = term.expect("Allow?")
    assert "notes.txt" in shown
    assert "+approved text" in shown
    term.send("n")
    term.expect("Understood, not written.")
    term.prompt()
    assert not (workspace / "notes.txt").exists()
    refused = [m for m in fake_server.bodies[1]["messages"] if m["role"] == "tool"]
    assert "declined" in message_text(refused[-1])
    term.send("ok, write it\r")
    term.expect("Allow?")
    term.send("y")
    term.expect("Written.")
    term.prompt()
    assert (workspace / "notes.txt").read_text() == "approved text\n"
    term.send("\x04")
    assert term.exit_code() == 0


def test_multi_line_input_arrives_as_one_message(fake_server: FakeServer, launch: Launch) -> None:
    fake_server.push_text("Got two lines.")
    fake_server.push_text("Got the paste.")
    term = launch("--no-memory")
    term.send("first line\x1b\rsecond line\r")
    term.expect("Got two lines.")
    term.prompt()
    term.send("see:\x1b[200~def f():\n    return 1\x1b[201~\r")
    term.expect("Got the paste.")
    term.prompt()
    assert user_texts(fake_server.bodies[0])[-1] == "first line\nsecond line"
    assert user_texts(fake_server.bodies[1])[-1] == "see:def f():\n    return 1"
    term.send("\x04")
    assert term.exit_code() == 0


def test_colour_codes_typed_without_bracketed_paste_are_text_not_a_crash(
    fake_server: FakeServer, launch: Launch
) -> None:
    fake_server.push_text("Got the colours.")
    term = launch("--no-memory")
    term.send("a\x1b[31mred\x1b[0mb\r")  # read by prompt_toolkit as a malformed mouse report
    term.expect("Got the colours.")
    term.prompt()
    assert "Press ENTER" not in plain(term.log.getvalue())
    assert user_texts(fake_server.bodies[0])[-1] == "a[31mred[0mb"
    term.send("\x04")
    assert term.exit_code() == 0


def test_no_model_configured_explains_the_settings_and_exits_2(workspace: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NANOHERMES_MODEL")}
    child = spawn(workspace, (), env)
    child.expect(pexpect.EOF, timeout=WAIT)
    child.close()
    text = plain(child.before or "")
    assert child.exitstatus == 2
    for needle in ("no model configured", "OPENAI_API_KEY", "api.deepseek.com", "11434", "config.toml"):
        assert needle in text


def test_undo_in_the_repl_over_a_later_edit_asks_first(
    fake_server: FakeServer, workspace: Path, launch: Launch
) -> None:
    (workspace / "notes.txt").write_text("mine\n")
    fake_server.push_tool_calls([("write_file", {"path": "notes.txt", "content": "agent text\n"})])
    fake_server.push_text("Rewritten.")
    term = launch("--no-memory", "--permission", "auto")
    term.send("rewrite the notes\r")
    term.expect("Rewritten.")
    term.expect("checkpoint 1: 1 file changed (notes.txt)")
    term.prompt()
    term.send("/diff\r")
    shown = plain(term.expect("+agent text"))
    assert "-mine" in shown
    term.prompt()
    (workspace / "notes.txt").write_text("edited again by hand\n")
    term.send("/undo\r")
    assert "+edited again by hand" in plain(term.expect("Allow?"))
    term.send("n")
    term.expect("nothing was undone")
    term.prompt()
    assert (workspace / "notes.txt").read_text() == "edited again by hand\n"
    term.send("/undo\r")
    term.expect("Allow?")
    term.send("y")
    term.expect("undid turn 1")
    term.prompt()
    assert (workspace / "notes.txt").read_text() == "mine\n"
    term.send("\x04")
    assert term.exit_code() == 0


def _run_to_exit(workspace: Path, args: tuple[str, ...], env: dict[str, str]) -> tuple[int | None, str]:
    """Run nanohermes in a pty until it exits: its exit status and what it printed, plain."""
    child = spawn(workspace, args, env)
    child.expect(pexpect.EOF, timeout=WAIT)
    child.close()
    return child.exitstatus, plain(child.before or "")


def test_resuming_a_broken_or_busy_session_is_one_line_before_any_prompt(
    fake_server: FakeServer, workspace: Path, isolated_home: Path
) -> None:
    sessions = isolated_home / ".nanohermes" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "broken.json").write_text('{"version": 2, "messages": [', encoding="utf-8")
    status, text = _run_to_exit(workspace, ("--session", "broken"), server_env(fake_server))
    assert status == 1, text
    assert "broken.json" in text
    assert PROMPT not in text
    assert "Traceback" not in text
    assert fake_server.bodies == []

    fake_server.push_text("Noted.")
    first = Terminal(workspace, ("--session", "held"), server_env(fake_server))
    try:
        first.prompt()
        first.send("remember this\r")
        first.expect("Noted.")
        status, busy = _run_to_exit(workspace, ("--session", "held"), server_env(fake_server))
        assert status == 2, busy
        assert "in use by another nanohermes" in busy
        assert PROMPT not in busy
    finally:
        first.close()
