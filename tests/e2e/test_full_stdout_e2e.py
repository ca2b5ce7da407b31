"""Standard output on a full disk (`> file` when the disk fills; /dev/full here): one line saying
so, exit 1, and nothing lost — a `-p` turn is still saved, its answer in the session."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_process import one_error_line, run_nanohermes, sessions_dir
from fake_server import FakeServer
from fake_server import fake_server as fake_server

KEY = "sk-full-stdout-0123456789abcdef"
FULL = Path("/dev/full")
pytestmark = pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")


def run_into_full(server: FakeServer | None, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    with FULL.open("w") as stdout:
        return run_nanohermes(server, cwd, *args, key=KEY, stdout=stdout)


@pytest.mark.parametrize("json_output", [False, True], ids=["text", "json"])
def test_a_p_answer_that_cannot_be_written_is_saved_and_said(
    fake_server: FakeServer, workspace: Path, json_output: bool
) -> None:
    fake_server.push_text("The answer is 42.")
    done = run_into_full(fake_server, workspace, "--session", "s", *(["--json"] * json_output), "-p", "q")
    line = one_error_line(done)
    assert done.returncode == 1
    assert "cannot write the answer to standard output: No space left on device" in line
    saved = sessions_dir() / "s.json"
    assert str(saved) in line
    messages = json.loads(saved.read_text(encoding="utf-8"))["messages"]
    assert messages[-1] == {"role": "assistant", "content": "The answer is 42."}


@pytest.mark.parametrize("args", [("--version",), ("memory", "export"), ("memory", "list")])
def test_a_command_whose_output_cannot_be_written_says_so_in_one_line(
    workspace: Path, args: tuple[str, ...]
) -> None:
    done = run_into_full(None, workspace, *args)
    assert done.returncode == 1
    line = one_error_line(done)
    assert line == "nanohermes: error: cannot write to standard output: No space left on device"
