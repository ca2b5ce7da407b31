"""End to end: `sandbox = "bwrap"` without bubblewrap says so once at start-up and refuses shell calls."""

from __future__ import annotations

import json
import os
from pathlib import Path

from cli_process import SCRIPT, run_nanohermes
from fake_server import FakeServer
from fake_server import fake_server as fake_server


def test_bwrap_mode_without_bubblewrap_refuses_shell_commands(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_tool_calls([("run_shell", {"command": "echo hi > out.txt"})])
    fake_server.push_text("ok")
    env = {**os.environ, "PATH": str(SCRIPT.parent), "NANOHERMES_SANDBOX": "bwrap"}  # no bwrap on PATH
    done = run_nanohermes(fake_server, workspace, "--yes", "--no-memory", "-p", "go", env=env)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "sandbox = bwrap" in line]
    assert len(warnings) == 2  # the start-up line, and the refused call's line
    assert "shell commands will be refused" in warnings[0]
    assert not (workspace / "out.txt").exists()
    tool_result = next(m for m in fake_server.bodies[-1]["messages"] if m["role"] == "tool")
    assert "shell command refused: sandbox = bwrap" in json.dumps(tool_result)
