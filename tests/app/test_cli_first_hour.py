"""A new user's first mistakes on the command line: a misspelt flag, an empty value, a prompt that
starts with '-', text piped into the REPL, a locale that is not UTF-8, --help into a full disk. Each
is one line naming the fix (exit 2 for usage errors), never a traceback, never a silent success."""

from __future__ import annotations

import argparse
import errno
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_process import SCRIPT, one_error_line, run_nanohermes
from fake_server import FakeServer
from fake_server import fake_server as fake_server

from nanohermes.app.args import UsageError, parse_args
from nanohermes.app.cli import main

UNREACHABLE = "http://127.0.0.1:9/v1"  # never contacted: every run below stops before a request


def usage_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one error line of a run that ended as a usage error (exit 2), and nothing else on stderr."""
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return one_error_line(result)


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (["--modle", "gpt-4o-mini"], "did you mean --model?"),
        (["--permision", "auto"], "did you mean --permission?"),
        (["--base_url", UNREACHABLE], "did you mean --base-url?"),
        (["memroy", "list"], "did you mean memory?"),
        (["memory", "list", "--al"], "did you mean --all?"),
        (["undo", "--lst"], "did you mean --list?"),
        (["acp", "--no-memroy"], "did you mean --no-memory?"),
    ],
)
def test_a_misspelt_flag_or_command_names_the_closest_one(
    workspace: Path, args: list[str], suggestion: str
) -> None:
    line = usage_error(run_nanohermes(None, workspace, *args))
    assert "unrecognized arguments: " in line
    assert suggestion in line


@pytest.mark.parametrize(
    ("args", "flag"), [(["--bogus"], "--bogus"), (["memory", "stats", "--explain"], "--explain")]
)
def test_a_flag_like_no_other_gets_no_suggestion(workspace: Path, args: list[str], flag: str) -> None:
    """Neither a far-fetched one nor the flag itself (`--explain` belongs to `memory search`)."""
    line = usage_error(run_nanohermes(None, workspace, *args))
    assert f"unrecognized arguments: {flag}" in line
    assert "did you mean" not in line


@pytest.mark.parametrize(
    "args", [["--mode", "auto"], ["--perm", "auto"], ["acp", "--mod", "m"], ["undo", "--li"]]
)
def test_a_shortened_flag_is_not_taken_for_a_longer_one(args: list[str]) -> None:
    """`--mode auto` (meaning the permission mode) was read as `--model auto`: the first request then
    failed with «model not found: auto», far from the typo."""
    with pytest.raises(UsageError, match="unrecognized arguments"):
        parse_args(args)


@pytest.mark.parametrize("args", [["-p", "-v"], ["--model", "m", "-p"]])
def test_a_prompt_missing_or_starting_with_a_dash_says_how_to_give_it(
    workspace: Path, args: list[str]
) -> None:
    line = usage_error(run_nanohermes(None, workspace, *args))
    assert "-p=TEXT" in line
    assert "-p -" in line


def test_a_prompt_given_as_p_equals_may_start_with_a_dash(fake_server: FakeServer, workspace: Path) -> None:
    fake_server.push_text("Flags explained.")
    result = run_nanohermes(fake_server, workspace, "-p=-v means verbose?")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Flags explained.\n"


@pytest.mark.parametrize("args", [["--model", "", "-p", "hi"], ["--model", "  "], ["acp", "--model", ""]])
def test_an_empty_model_is_a_usage_error_not_the_setup_text(workspace: Path, args: list[str]) -> None:
    """`--model "$UNSET"` printed the twelve-line "no model configured" guide as if no flag was given."""
    line = usage_error(run_nanohermes(None, workspace, "--base-url", UNREACHABLE, *args))
    assert "--model needs a model name" in line


@pytest.mark.parametrize("stdin", [None, "fix the tests\n/exit\n"])
def test_the_repl_with_stdin_not_a_terminal_points_at_dash_p(workspace: Path, stdin: str | None) -> None:
    """`echo … | nanohermes` drew the prompt and bottom bar into the output as escape sequences, took
    each line as a message, and exited 0; `< /dev/null` opened and closed a REPL."""
    result = run_nanohermes(None, workspace, "--model", "m", "--base-url", UNREACHABLE, stdin=stdin)
    line = usage_error(result)
    assert "standard input is not a terminal" in line
    assert "nanohermes -p -" in line
    assert result.stdout == ""


def test_no_model_and_no_terminal_still_explains_the_settings(workspace: Path) -> None:
    result = run_nanohermes(None, workspace)
    assert result.returncode == 2
    assert "no model configured" in result.stderr
    assert "standard input is not a terminal" not in result.stderr


ANSWER = "Héllo — 中文 😀"


def run_in_latin1(server: FakeServer, workspace: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`nanohermes -p` under a Latin-1 locale (as LANG=en_US.ISO-8859-1 sets up Python's stdio)."""
    return subprocess.run(
        [str(SCRIPT), "--base-url", server.url, "--model", "m", "-p", "hi", *args],
        cwd=workspace,
        env={**os.environ, "PYTHONIOENCODING": "latin-1"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_an_answer_the_locale_cannot_encode_is_printed_escaped(
    fake_server: FakeServer, workspace: Path
) -> None:
    """It ended in «internal error: UnicodeEncodeError: 'latin-1' codec can't encode '\\u2014'», exit 1,
    the answer never shown."""
    fake_server.push_text(ANSWER)
    result = run_in_latin1(fake_server, workspace)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode("latin-1") == "Héllo \\u2014 \\u4e2d\\u6587 \\U0001f600\n"
    assert b"Error" not in result.stderr


@pytest.mark.parametrize("args", [["--json"], ["--output-format", "stream-json"]], ids=["json", "stream"])
def test_json_in_a_locale_that_is_not_utf8_stays_valid_json(
    fake_server: FakeServer, workspace: Path, args: list[str]
) -> None:
    fake_server.push_text(ANSWER)
    result = run_in_latin1(fake_server, workspace, *args)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.decode("ascii").splitlines()]
    assert lines[-1]["answer"] == ANSWER


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["--help"], ["memory", "--help"], ["--verbose", "--version"]])
def test_help_into_a_full_disk_is_not_a_success(workspace: Path, args: list[str]) -> None:
    """argparse drops the error of its own write: `nanohermes --help > file` on a full disk exited 0."""
    with open("/dev/full", "w") as full:
        result = run_nanohermes(None, workspace, *args, stdout=full)
    assert result.returncode == 1
    assert (
        one_error_line(result)
        == "nanohermes: error: cannot write to standard output: No space left on device"
    )


class _FullDisk(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("args", [["--help"], ["--verbose", "--version"]])
def test_help_into_a_full_disk_is_one_line_when_argparse_lets_the_error_escape(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    """Python 3.11.2's argparse does not drop the error of its own write (3.11.7's does): the
    OSError came out of parse_args as «internal error: OSError», with a traceback under --verbose."""

    def print_message(self: argparse.ArgumentParser, message: str, file: Any = None) -> None:
        (file or sys.stderr).write(message)  # as 3.11.2 does: no try/except around the write

    monkeypatch.setattr(argparse.ArgumentParser, "_print_message", print_message)
    monkeypatch.setattr(sys, "stdout", _FullDisk())
    assert main(args) == 1
    error = capsys.readouterr().err
    assert error == "nanohermes: error: cannot write to standard output: No space left on device\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_session_path_that_is_a_fifo_or_a_device_is_a_usage_error(workspace: Path) -> None:
    """Like a directory, a FIFO or /dev/zero named as --session is a bad flag value: exit 2 (was 1)."""
    os.mkfifo(workspace / "fifo.json")
    (workspace / "zero.json").symlink_to("/dev/zero")
    for name in ("fifo.json", "zero.json"):
        args = ("--model", "m", "--base-url", UNREACHABLE, "--session", str(workspace / name), "-p", "hi")
        line = usage_error(run_nanohermes(None, workspace, *args, timeout=30))
        assert "is not a regular file" in line


def test_dash_p_dash_at_a_terminal_says_it_is_reading(fake_server: FakeServer, workspace: Path) -> None:
    """`nanohermes -p -` typed at a terminal waited for end-of-file without a word: it looked hung."""
    pexpect = pytest.importorskip("pexpect")
    fake_server.push_text("Read you.")
    args = ["--base-url", fake_server.url, "--model", "m", "--no-memory", "-p", "-"]
    child = pexpect.spawn(str(SCRIPT), args, cwd=str(workspace), env=dict(os.environ), encoding="utf-8")
    try:
        child.expect("end it with Ctrl-D", timeout=30)
        child.send("typed prompt\r")
        child.sendeof()
        child.expect("Read you.", timeout=30)
        child.expect(pexpect.EOF, timeout=30)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert "typed prompt" in json.dumps(fake_server.bodies[0])
