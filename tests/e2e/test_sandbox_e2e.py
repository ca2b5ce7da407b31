"""End to end: `sandbox = "bwrap"` without bubblewrap says so once at start-up and refuses shell calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fake_server import FakeServer
from fake_server import fake_server as fake_server

SCRIPT = Path(sys.executable).with_name("nanohermes")


def test_bwrap_mode_without_bubblewrap_refuses_shell_commands(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fake_server.push_tool_calls([("run_shell", {"command": "echo hi > out.txt"})])
    fake_server.push_text("ok")
    env = {**os.environ, "PATH": str(SCRIPT.parent), "NANOHERMES_SANDBOX": "bwrap"}  # no bwrap on PATH
    command = [str(SCRIPT), "--base-url", fake_server.url, "--model", "m", "--yes", "--no-memory", "-p", "go"]
    done = subprocess.run(command, cwd=workspace, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "sandbox = bwrap" in line]
    assert len(warnings) == 2  # the start-up line, and the refused call's line
    assert "shell commands will be refused" in warnings[0]
    assert not (workspace / "out.txt").exists()
    tool_result = next(m for m in fake_server.bodies[-1]["messages"] if m["role"] == "tool")
    assert "shell command refused: sandbox = bwrap" in json.dumps(tool_result)
