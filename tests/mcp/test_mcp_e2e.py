"""End to end: the real `nanohermes` console script with MCP servers (the demo server as a subprocess)
against the fake loopback model endpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_server import FakeServer
from fake_server import fake_server as fake_server
from mcp_helpers import DEMO, process_gone, wait_for

SCRIPT = Path(sys.executable).with_name("nanohermes")
DISTILL = "durable long-term memories"
pytestmark = pytest.mark.timeout(120)


def demo_toml(markers: Path, name: str = "demo", extra: str = "") -> str:
    args = json.dumps([str(DEMO), "--marker-dir", str(markers)])
    return f"[mcp_servers.{name}]\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n{extra}"


def nh(cwd: Path, *args: str, server: FakeServer | None = None) -> subprocess.CompletedProcess[str]:
    endpoint = ["--base-url", server.url, "--model", "fake-model"] if server else []
    env = {**os.environ, "NANOHERMES_API_KEY": "sk-test"}
    return subprocess.run(
        [str(SCRIPT), *endpoint, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=90
    )


def chat_bodies(server: FakeServer) -> list[dict[str, Any]]:
    return [body for body in server.bodies if DISTILL not in json.dumps(body)]


def tool_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    path = tmp_path / "markers"
    path.mkdir()
    return path


def test_a_call_and_its_result_reach_the_model(
    fake_server: FakeServer, tmp_path: Path, markers: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(demo_toml(markers), encoding="utf-8")
    fake_server.push_tool_calls([("mcp__demo__echo", {"text": "ping"}), ("mcp__demo__spawn_child", {})])
    fake_server.push_text("The server said ping.")
    done = nh(tmp_path, "--config", str(config), "-p", "echo ping", server=fake_server)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The server said ping.\n"
    first, second = chat_bodies(fake_server)[:2]
    offered = {tool["function"]["name"]: tool["function"] for tool in first["tools"]}
    assert offered["mcp__demo__echo"]["description"] == "Echo the text back."
    assert offered["mcp__demo__echo"]["parameters"]["properties"]["text"]["type"] == "string"
    assert "mcp__demo__write_note" in offered  # ask mode: offered, refused without --yes
    assert tool_messages(second)[0] == "echo: ping"
    server_pid = int((markers / "server.pid").read_text())
    child_pid = int((markers / "child.pid").read_text())
    assert wait_for(lambda: process_gone(server_pid) and process_gone(child_pid))  # no orphans


def test_one_shot_refuses_writing_tools_without_yes(
    fake_server: FakeServer, tmp_path: Path, markers: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(demo_toml(markers), encoding="utf-8")
    fake_server.push_tool_calls([("mcp__demo__write_note", {"name": "n.txt", "text": "hi"})])
    fake_server.push_text("ok")
    assert nh(tmp_path, "--config", str(config), "-p", "write", server=fake_server).returncode == 0
    assert "was refused" in tool_messages(chat_bodies(fake_server)[1])[0]
    assert not (tmp_path / "n.txt").exists()
    fake_server.push_tool_calls([("mcp__demo__write_note", {"name": "n.txt", "text": "hi"})])
    fake_server.push_text("ok")
    assert nh(tmp_path, "--config", str(config), "--yes", "-p", "write", server=fake_server).returncode == 0
    assert (tmp_path / "n.txt").read_text() == "hi"


def test_read_only_mode_does_not_offer_writing_tools(
    fake_server: FakeServer, tmp_path: Path, markers: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(demo_toml(markers), encoding="utf-8")
    fake_server.push_text("ok")
    done = nh(tmp_path, "--config", str(config), "--permission", "read-only", "-p", "hi", server=fake_server)
    assert done.returncode == 0, done.stderr
    offered = {tool["function"]["name"] for tool in chat_bodies(fake_server)[0]["tools"]}
    assert "mcp__demo__echo" in offered
    assert "mcp__demo__write_note" not in offered


def test_json_config_form_and_a_missing_server(
    fake_server: FakeServer, tmp_path: Path, markers: Path
) -> None:
    servers = {
        "demo": {"command": sys.executable, "args": [str(DEMO), "--marker-dir", str(markers)]},
        "ghost": {"command": "nanohermes-no-such-mcp-server", "args": []},
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    fake_server.push_tool_calls([("mcp__demo__add", {"a": 2, "b": 40})])
    fake_server.push_text("42")
    done = nh(tmp_path, "--mcp-config", str(path), "-p", "add", server=fake_server)
    assert done.returncode == 0, done.stderr
    assert '"sum": 42' in tool_messages(chat_bodies(fake_server)[1])[0]
    assert "MCP server ghost failed to start: command not found: nanohermes-no-such-mcp-server" in done.stderr


def test_bad_mcp_table_is_a_usage_error_naming_file_and_line(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('model = "m"\n[mcp_servers.x]\ncommand = "a"\nurl = "http://h/mcp"\n', encoding="utf-8")
    done = nh(tmp_path, "--config", str(config), "-p", "hi")
    assert done.returncode == 2
    assert f"{config}, line 2: MCP server 'x': give either command" in done.stderr
    assert "Traceback" not in done.stderr


def test_mcp_list(tmp_path: Path, markers: Path) -> None:
    toml = demo_toml(markers) + '[mcp_servers.ghost]\ncommand = "nanohermes-no-such-mcp-server"\n'
    toml += '[mcp_servers.off]\ncommand = "x"\nenabled = false\n'
    config = tmp_path / "config.toml"
    config.write_text(toml, encoding="utf-8")
    done = nh(tmp_path, "mcp", "list", "--config", str(config))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"demo · ready · stdio: {sys.executable} ")
    assert any(line.split()[:2] == ["mcp__demo__echo", "read"] for line in lines)
    assert any(line.split()[:2] == ["mcp__demo__write_note", "asks"] for line in lines)
    assert "ghost · failed · stdio: nanohermes-no-such-mcp-server · 0 tools" in lines
    assert "  last error: command not found: nanohermes-no-such-mcp-server" in lines
    assert "off · disabled · stdio: x · 0 tools" in lines
    assert "not ready: ghost" in done.stderr
    assert wait_for(lambda: process_gone(int((markers / "server.pid").read_text())))


def test_mcp_list_without_servers(tmp_path: Path) -> None:
    done = nh(tmp_path, "mcp", "list")
    assert done.returncode == 0
    assert done.stdout.startswith("no MCP servers configured")
