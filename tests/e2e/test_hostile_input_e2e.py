"""Hostile input at the edges of `nanohermes -p`: an API key that cannot travel in a header, stdin that
is closed or binary, an argument that is not UTF-8, stdout closed by its reader. The real console
script against the fake loopback endpoint; every subprocess has a timeout."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from cli_process import (
    chat_bodies,
    child_env,
    nanohermes_command,
    one_error_line,
    run_nanohermes,
    sessions_dir,
)
from fake_server import FakeServer
from fake_server import fake_server as fake_server

KEY = "sk-hostile-SECRET-0123456789abcdef"


def last_user_text(server: FakeServer) -> str:
    messages = chat_bodies(server)[0]["messages"]
    return str([m for m in messages if m["role"] == "user"][-1]["content"])


def test_a_key_with_a_stray_character_is_never_printed(fake_server: FakeServer, workspace: Path) -> None:
    """A space or newline inside the key made httpx refuse the header and quote it whole on stderr:
    `cannot reach …: Illegal header value b'Bearer sk-…'`."""
    for broken in (KEY[:12] + " " + KEY[12:], KEY[:12] + "\r\nX-Evil: 1"):
        result = run_nanohermes(fake_server, workspace, "-p", "hi", key=broken)
        assert result.returncode == 2
        assert "NANOHERMES_API_KEY" in one_error_line(result)
        assert "0123456789" not in result.stderr + result.stdout
        assert "SECRET" not in result.stderr + result.stdout
    assert fake_server.requests == []


def test_a_key_copied_with_blanks_around_it_works(fake_server: FakeServer, workspace: Path) -> None:
    fake_server.push_text("hello")
    result = run_nanohermes(fake_server, workspace, "-p", "hi", key=f"  {KEY}\t")
    assert result.returncode == 0, result.stderr
    assert fake_server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_binary_stdin_is_a_prompt_with_replacement_characters(
    fake_server: FakeServer, workspace: Path
) -> None:
    """Bytes that are not UTF-8 became lone surrogates: `internal error: UnicodeEncodeError`."""
    fake_server.push_text("a picture of bytes")
    result = subprocess.run(
        nanohermes_command(fake_server, "-p", "-"),
        cwd=workspace,
        env=child_env(KEY),
        input=b"look: \xff\xfe\x00\xed\xa0\x80 end",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == "a picture of bytes\n"
    assert last_user_text(fake_server).startswith("look: \ufffd\ufffd")
    assert last_user_text(fake_server).endswith(" end")


def test_an_argument_that_is_not_utf8_is_a_prompt(fake_server: FakeServer, workspace: Path) -> None:
    fake_server.push_text("fine")
    result = run_nanohermes(fake_server, workspace, "-p", "caf\udce9 au lait", key=KEY)  # b"caf\xe9 au lait"
    assert result.returncode == 0, result.stderr
    assert last_user_text(fake_server) == "caf\ufffd au lait"


def test_a_closed_stdin_is_one_line(fake_server: FakeServer, workspace: Path) -> None:
    """`nanohermes -p - <&-`: `internal error: AttributeError: 'NoneType' object has no attribute 'read'`."""
    result = subprocess.run(
        nanohermes_command(fake_server, "-p", "-"),
        cwd=workspace,
        env=child_env(KEY),
        stdin=None,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=lambda: os.close(0),  # noqa: PLW1509 - the child must start with fd 0 closed
    )
    assert result.returncode == 2
    assert "stdin is closed" in one_error_line(result)
    assert fake_server.requests == []


def test_stdout_closed_by_its_reader_keeps_the_turn_and_says_where(
    fake_server: FakeServer, workspace: Path
) -> None:
    """`nanohermes -p hi | head -c1`: `internal error: BrokenPipeError`, and the turn was never saved."""
    fake_server.push_text("the answer nobody read")
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = run_nanohermes(fake_server, workspace, "-p", "hi", key=KEY, stdout=write_end)
    finally:
        os.close(write_end)
    assert result.returncode == 1
    line = one_error_line(result)
    assert "standard output was closed" in line
    saved = list(sessions_dir().glob("*.json"))
    assert len(saved) == 1
    assert str(saved[0]) in line
    messages = json.loads(saved[0].read_text(encoding="utf-8"))["messages"]
    assert messages[-1]["content"] == "the answer nobody read"
