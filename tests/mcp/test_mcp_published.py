"""Opt-in: a published server from PyPI (`mcp-server-time`), installed the way a user would (its own
virtualenv, like `pipx` or `uvx`), started by nanohermes over stdio. `pytest -m mcp_published`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mcp_helpers import Managers

from nanohermes.config.mcp_config import McpServerConfig
from nanohermes.tools.base import CallContext

pytestmark = [pytest.mark.mcp_published, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def time_server(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("mcp-server-time") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "mcp-server-time"]
    installed = subprocess.run(pip, capture_output=True, text=True, timeout=480)
    if installed.returncode != 0:
        pytest.skip(f"cannot install mcp-server-time from PyPI: {installed.stderr.strip()[-200:]}")
    return venv / "bin" / "mcp-server-time"


def test_published_time_server(managers: Managers, time_server: Path) -> None:
    config = McpServerConfig(command=str(time_server), args=("--local-timezone", "UTC"), startup_timeout=60)
    manager = managers({"time": config})
    tools = {tool.name: tool for tool in manager.tools()}
    [status] = manager.status()
    assert status.state == "ready", status.last_error
    assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= set(tools)
    current = tools["mcp__time__get_current_time"]
    assert "timezone" in current.parameters["properties"]
    assert current.context_arg is not None
    text = current.func(timezone="Asia/Tokyo", **{current.context_arg: CallContext()})
    assert "Asia/Tokyo" in text
    assert '"datetime"' in text
