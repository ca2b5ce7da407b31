"""What a new user meets in a terminal in the first hour (issue #20): the real `nanohermes` in a
pseudo-terminal (pexpect) against the fake server. The `-p` side is in tests/e2e/test_first_hour.py."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from fake_server import FakeServer
from fake_server import fake_server as fake_server
from test_ui_pty import WAIT, Terminal, plain, server_env

pytestmark = pytest.mark.pty

SCRIPT = Path(sys.executable).with_name("nanohermes")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def start(opened: list[Terminal], workspace: Path, env: dict[str, str], *args: str) -> Terminal:
    terminal = Terminal(workspace, args, env)
    opened.append(terminal)
    return terminal


def test_one_shot_streams_to_a_terminal(
    fake_server: FakeServer, workspace: Path, terminals: list[Terminal]
) -> None:
    fake_server.push_text("Once upon a time " + "and then more " * 40 + "THE END.", delay=0.05)
    term = start(terminals, workspace, server_env(fake_server), "--no-memory", "-p", "tell a story")
    term.expect("Once upon")
    assert "THE END." not in plain(term.log.getvalue())  # shown while the rest still streams
    term.expect("THE END.")
    assert term.exit_code() == 0
    assert plain(term.log.getvalue()).count("Once upon") == 1  # streamed, not printed again


def test_resumed_repl_shows_the_last_exchanges(
    fake_server: FakeServer, workspace: Path, terminals: list[Terminal]
) -> None:
    env = server_env(fake_server)
    for question, answer in (("first question", "First answer."), ("second question", "Second answer.")):
        fake_server.push_text(answer)
        done = subprocess.run(
            [str(SCRIPT), "--session", "past", "-p", question],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
    fake_server.push_text("Long " * 200)
    subprocess.run(
        [str(SCRIPT), "--session", "past", "-p", "third"], cwd=workspace, env=env, timeout=60, check=True
    )
    term = start(terminals, workspace, env, "--session", "past")
    shown = term.expect("❯")
    assert "resumed past: 6 messages" in shown
    lines = [line.strip() for line in shown.splitlines()]
    assert "you: first question" in lines
    assert "→ First answer." in lines
    assert "you: third" in lines
    long_line = next(line for line in lines if line.startswith("→ Long"))
    assert long_line.endswith("…")
    assert len(long_line) < 100
    term.send("\x04")
    assert term.exit_code() == 0


def test_ctrl_d_names_continue_and_continue_stays_in_its_workspace(
    fake_server: FakeServer, workspace: Path, tmp_path: Path, terminals: list[Terminal]
) -> None:
    env = server_env(fake_server)
    fake_server.push_text("Noted.")
    term = start(terminals, workspace, env)
    term.expect("❯")
    term.send("remember blue\r")
    term.expect("Noted.")
    term.expect("❯")
    term.send("\x04")
    farewell = term.expect("latest session in this directory")
    assert "Resume it with: nanohermes --session" in farewell
    assert "nanohermes --continue" in farewell
    assert term.exit_code() == 0
    other = tmp_path / "other"
    other.mkdir()
    fresh = start(terminals, other, env, "--continue")
    shown = fresh.expect("❯")
    assert f"no earlier session in this workspace ({other}); starting a new one" in " ".join(shown.split())
    assert "resumed" not in shown
    fresh.send("\x04")
    assert fresh.exit_code() == 0
    again = start(terminals, workspace, env, "--continue")
    shown = again.expect("❯")
    assert "you: remember blue" in shown
    again.send("\x04")
    assert again.exit_code() == 0


def test_missing_key_for_a_remote_endpoint_is_said_at_start_up(
    workspace: Path, terminals: list[Terminal]
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("API_KEY")}
    env.update(
        NANOHERMES_MODEL="m", NANOHERMES_BASE_URL="https://api.example.invalid/v1", TERM="xterm-256color"
    )
    env["PROMPT_TOOLKIT_NO_CPR"] = "1"
    term = start(terminals, workspace, env, "--no-memory")
    shown = term.expect("❯")
    assert "no API key set for https://api.example.invalid/v1" in " ".join(shown.split())
    term.send("\x04")
    assert term.exit_code() == 0


def test_yes_in_the_repl_is_said_and_means_auto(
    fake_server: FakeServer, workspace: Path, terminals: list[Terminal]
) -> None:
    fake_server.push_tool_calls([("write_file", {"path": "a.txt", "content": "hi\n"})])
    fake_server.push_text("Written.")
    term = start(terminals, workspace, server_env(fake_server), "--no-memory", "--yes")
    shown = term.expect("❯")
    assert "--yes: permission auto for this session" in " ".join(shown.split())
    term.send("write it\r")
    shown = term.expect("Written.")
    assert "Allow?" not in shown
    assert "Created a.txt (1 line, 3 chars)" in shown
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "hi\n"
    term.expect("❯")
    term.send("\x04")
    assert term.exit_code() == 0


def test_unreadable_memory_file_is_reported_before_the_first_message(
    fake_server: FakeServer, workspace: Path, terminals: list[Terminal]
) -> None:
    memory = Path(os.environ["NANOHERMES_MEMORY_DIR"]) / "memory.json"
    memory.parent.mkdir(parents=True, exist_ok=True)
    memory.write_text("{not json", encoding="utf-8")
    term = start(terminals, workspace, server_env(fake_server))
    term.expect("memory.json was unreadable")
    assert fake_server.bodies == []
    term.expect("❯")
    term.send("\x04")
    assert term.exit_code() == 0


def test_tokens_are_estimated_when_the_server_sends_no_usage(
    fake_server: FakeServer, workspace: Path, terminals: list[Terminal]
) -> None:
    fake_server.send_usage = False
    fake_server.push_text("Hello there, friend.")
    term = start(terminals, workspace, server_env(fake_server), "--no-memory")
    term.expect("❯")
    term.send("hi\r")
    term.expect("Hello there, friend.")
    term.expect("❯")
    term.send("/tokens\r")
    shown = term.expect("context:")
    assert "(estimated" in shown
    assert "= 0" not in shown
    term.send("\x04")
    try:
        term.child.expect(pexpect.EOF, timeout=WAIT)
    finally:
        term.child.close()
