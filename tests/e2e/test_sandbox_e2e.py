"""End to end, the real `nanohermes -p`: bubblewrap missing; the files that hold keys hidden from it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
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


def test_files_named_on_the_command_line_that_may_hold_tokens_are_hidden_from_the_sandbox(
    fake_server: FakeServer, workspace: Path, outside_tmp: Path
) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    tmp_path = outside_tmp  # the sandbox's /tmp is its own: these must be visible but for hiding
    mcp = tmp_path / "mcp.json"  # outside ~/.nanohermes: only the command line names it
    mcp.write_text(
        '{"mcpServers": {"gh": {"url": "http://127.0.0.1:9/mcp", "enabled": false, '
        '"headers": {"Authorization": "Bearer ghp-TOKEN-IN-MCP-CONFIG"}}}}'
    )
    config = tmp_path / "nh.toml"
    config.write_text('api_key = "sk-TOKEN-IN-CONFIG"\n')
    fake_server.push_tool_calls([("run_shell", {"command": f"cat {mcp} {config}; echo done"})])
    fake_server.push_text("ok")
    env = {**os.environ, "NANOHERMES_SANDBOX": "bwrap"}
    done = run_nanohermes(
        fake_server,
        workspace,
        "--config",
        str(config),
        "--mcp-config",
        str(mcp),
        "--yes",
        "--no-memory",
        "-p",
        "go",
        env=env,
    )
    if "shell commands will be refused" in done.stderr:
        pytest.skip("bubblewrap cannot run here")
    assert done.returncode == 0, done.stderr
    tool_result = json.dumps(next(m for m in fake_server.bodies[-1]["messages"] if m["role"] == "tool"))
    assert "done" in tool_result  # the command ran
    assert "TOKEN-IN" not in tool_result


def test_auto_falling_back_to_plain_commands_is_said_in_one_shot_mode(
    fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    """bubblewrap installed but unable to start (no user namespaces here): with `auto`, -p ran the
    commands unsandboxed and said so only with --verbose. Now one line, as the README promises."""
    tools = tmp_path / "bin"
    tools.mkdir()
    fake = tools / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    fake_server.push_tool_calls([("run_shell", {"command": "echo hi > out.txt"})])
    fake_server.push_text("ok")
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}", "NANOHERMES_SANDBOX": "auto"}
    done = run_nanohermes(fake_server, workspace, "--yes", "--no-memory", "-p", "go", env=env)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "without a sandbox" in line]
    assert len(said) == 1, done.stderr
    assert "No permissions to create new namespace" in said[0]
    assert (workspace / "out.txt").read_text() == "hi\n"
