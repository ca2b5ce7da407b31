"""What a new user trips over in the first hour (issue #20), through the real `nanohermes -p`
against the fake loopback endpoint. The REPL side of it is in tests/ui/test_ui_first_hour.py."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_server import FakeServer
from fake_server import fake_server as fake_server

SCRIPT = Path(sys.executable).with_name("nanohermes")
DISTILL = "durable long-term memories"  # a phrase of the distill system prompt
LESSON = '[{"kind": "lesson", "text": "The build needs make before tests.", "keys": ["build"]}]'
SLOW_DISTILL = 8.0  # seconds the distillation reply is held back


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def sessions_dir() -> Path:
    return Path(os.environ["NANOHERMES_SESSIONS_DIR"])


def memory_file() -> Path:
    return Path(os.environ["NANOHERMES_MEMORY_DIR"]) / "memory.json"


def command(server: FakeServer, *args: str) -> list[str]:
    return [str(SCRIPT), "--base-url", server.url, "--model", "fake-model", *args]


def nh(
    server: FakeServer, cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(server, *args),
        cwd=cwd,
        env=env or dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
    )


def read_line(process: subprocess.Popen[str], timeout: float) -> str:
    """One line of the process's stdout, or "" when none came within `timeout`."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    return process.stdout.readline() if ready else ""


def slow_distillation_turn(server: FakeServer, workspace: Path) -> subprocess.Popen[str]:
    """A tool turn (worth distilling) whose distillation reply is held back SLOW_DISTILL seconds."""
    (workspace / "Makefile").write_text("all:\n\ttrue\n", encoding="utf-8")
    server.push_tool_calls([("list_files", {})])
    server.push_text("There is a Makefile.")
    server.push_text(LESSON, match=DISTILL, delay=SLOW_DISTILL)
    return subprocess.Popen(
        command(server, "--session", "slow", "-p", "what is here?"),
        cwd=workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )


# -- 1 and 2: the answer comes first; Ctrl-C while distilling never loses it ----------------------


def test_answer_is_printed_before_a_slow_distillation_finishes(
    fake_server: FakeServer, workspace: Path
) -> None:
    process = slow_distillation_turn(fake_server, workspace)
    try:
        line = read_line(process, timeout=SLOW_DISTILL - 2)
        assert line == "There is a Makefile.\n"
        assert process.poll() is None  # still waiting for distillation
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert out == ""
    assert "saving what to remember from this turn" in err
    assert "1 memory saved" in err
    assert "The build needs make before tests." in memory_file().read_text(encoding="utf-8")


def test_ctrl_c_while_distilling_keeps_the_answer_and_skips_distillation(
    fake_server: FakeServer, workspace: Path
) -> None:
    process = slow_distillation_turn(fake_server, workspace)
    try:
        line = read_line(process, timeout=SLOW_DISTILL - 2)
        assert line == "There is a Makefile.\n"
        assert fake_server.wait_for_requests(3, timeout=10)  # the distillation request is out
        time.sleep(1.5)  # past the moment after which the wait is announced
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert out == ""
    assert "memory distillation skipped" in err
    assert "Traceback" not in err
    assert not memory_file().exists() or "make before" not in memory_file().read_text(encoding="utf-8")
    saved = json.loads((sessions_dir() / "slow.json").read_text(encoding="utf-8"))
    assert saved["messages"][-1] == {"role": "assistant", "content": "There is a Makefile."}


def test_json_output_comes_before_a_slow_distillation_finishes(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_tool_calls([("list_files", {})])
    fake_server.push_text("Listed.")
    fake_server.push_text(LESSON, match=DISTILL, delay=SLOW_DISTILL)
    process = subprocess.Popen(
        command(fake_server, "-p", "list", "--json"),
        cwd=workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = read_line(process, timeout=SLOW_DISTILL - 2)
        assert json.loads(line)["answer"] == "Listed."
        assert process.poll() is None
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err


def test_interrupted_turn_says_so_once(fake_server: FakeServer, workspace: Path) -> None:
    fake_server.push_text("word " * 400, delay=0.05)
    process = subprocess.Popen(
        command(fake_server, "-p", "tell me"),
        cwd=workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert fake_server.wait_for_requests(1, timeout=30)
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130
    assert out == ""
    assert err.count("interrupted by user") == 1, err
