"""MCP server configuration: the TOML tables, the JSON `mcpServers` form, ACP's list, tool names."""

from __future__ import annotations

import json
import os
from concurrent.futures import Future
from pathlib import Path

import pytest

from nanohermes.config.mcp_config import McpServerConfig, servers_from_acp, tool_name
from nanohermes.config.settings import load_settings
from nanohermes.core.errors import ConfigError
from nanohermes.mcp.tools import build_tools, normalize_schema, render_result


def settings_from(tmp_path: Path, toml: str, *json_files: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "config.toml"
    path.write_text(toml, encoding="utf-8")
    return load_settings(config_file=path, mcp_config=json_files)


def never(*_args: object) -> Future[str]:
    raise AssertionError("not called")


def config_error(tmp_path: Path, toml: str) -> str:
    with pytest.raises(ConfigError) as caught:
        settings_from(tmp_path, toml)
    return caught.value.one_line()


def test_toml_tables_stdio_and_http(tmp_path: Path) -> None:
    settings = settings_from(
        tmp_path,
        '[mcp_servers.time]\ncommand = "uvx"\nargs = ["mcp-server-time"]\nenv = { TZ = "UTC" }\n'
        'cwd = "~/work"\n\n[mcp_servers.docs]\nurl = "https://example.com/mcp"\n'
        'headers = { Authorization = "Bearer t" }\ntool_timeout = 5\ntrusted = true\nenabled = false\n',
    )
    time, docs = settings.mcp_servers["time"], settings.mcp_servers["docs"]
    assert (time.transport, time.command, time.args, time.env) == (
        "stdio",
        "uvx",
        ("mcp-server-time",),
        {"TZ": "UTC"},
    )
    assert (time.startup_timeout, time.tool_timeout, time.trusted, time.enabled) == (10.0, 60.0, False, True)
    assert time.cwd == Path.home() / "work"
    assert (docs.transport, docs.url, docs.tool_timeout, docs.trusted, docs.enabled) == (
        "http",
        "https://example.com/mcp",
        5.0,
        True,
        False,
    )
    assert docs.target() == "https://example.com/mcp"
    assert time.target() == "uvx mcp-server-time"


def test_enabled_and_disabled_tools(tmp_path: Path) -> None:
    settings = settings_from(
        tmp_path, '[mcp_servers.gh]\ncommand = "x"\nenabled_tools = ["a", "b"]\ndisabled_tools = ["b"]\n'
    )
    gh = settings.mcp_servers["gh"]
    assert [tool for tool in ("a", "b", "c") if gh.offers(tool)] == ["a"]
    everything = McpServerConfig(command="x", disabled_tools=("c",))
    assert [tool for tool in ("a", "b", "c") if everything.offers(tool)] == ["a", "b"]


def test_no_servers_by_default(tmp_path: Path) -> None:
    assert settings_from(tmp_path, 'model = "m"\n').mcp_servers == {}


@pytest.mark.parametrize(
    ("toml", "line", "message"),
    [
        ('[mcp_servers.t]\ncommand = "x"\ncomand = "y"\n', 3, "MCP server 't': unknown key 'comand'"),
        ('[mcp_servers.t]\nargs = ["a"]\n', 1, "give either command"),
        ('[mcp_servers.t]\ncommand = "x"\nurl = "http://h/mcp"\n', 1, "give either command"),
        ('[mcp_servers.t]\nurl = "ftp://h"\n', 2, "for url: must start with http:// or https://"),
        ('[mcp_servers.t]\ncommand = "x"\nheaders = { A = "b" }\n', 1, "headers is for HTTP servers"),
        ('[mcp_servers.t]\nurl = "http://h/mcp"\nargs = ["a"]\n', 1, "args is for stdio servers"),
        ('model = "m"\n[mcp_servers.t]\ncommand = "x"\ntool_timeout = -1\n', 4, "tool_timeout"),
        ('[mcp_servers.t]\ncommand = "x"\ndisabled_tools = "rm"\n', 3, "for disabled_tools: Input should be"),
        ('[mcp_servers."t"]\ncommand = "x"\nstartup_timeout = nan\n', 3, "for startup_timeout"),
        ('[mcp_servers.t]\ncommand = "x"\nargs = "a b"\n', 3, "args"),
    ],
)
def test_bad_tables_name_file_line_and_cause(tmp_path: Path, toml: str, line: int, message: str) -> None:
    error = config_error(tmp_path, toml)
    assert f"config.toml, line {line}: " in error
    assert message in error


def test_secret_values_are_never_shown(tmp_path: Path) -> None:
    error = config_error(tmp_path, '[mcp_servers.t]\ncommand = "x"\nenv = { TOKEN = ["sk-very-secret"] }\n')
    assert "env.TOKEN" in error
    assert "sk-very-secret" not in error


def test_server_names_that_clash_once_sanitized(tmp_path: Path) -> None:
    error = config_error(tmp_path, '[mcp_servers."a.b"]\ncommand = "x"\n[mcp_servers.a_b]\ncommand = "y"\n')
    assert "same tool prefix mcp__a_b__" in error


def test_json_form_joins_and_overrides_the_toml_servers(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]},
                    "web": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"A": "b"}},
                    "time": {"command": "python", "args": ["-m", "mcp_server_time"], "disabled": True},
                }
            }
        ),
        encoding="utf-8",
    )
    settings = settings_from(
        tmp_path, '[mcp_servers.time]\ncommand = "uvx"\n[mcp_servers.keep]\ncommand = "k"\n', path
    )
    servers = settings.mcp_servers
    assert sorted(servers) == ["fs", "keep", "time", "web"]
    assert servers["fs"].args == ("-y", "@modelcontextprotocol/server-filesystem", ".")
    assert servers["web"].transport == "http"
    assert servers["time"].command == "python"
    assert not servers["time"].enabled


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}', "line 3: not valid JSON"),
        ('{"servers": {}}', 'no "mcpServers" object'),
        (
            '{\n "mcpServers": {\n  "a": {\n   "command": "x",\n   "autoStart": true\n  }\n }\n}',
            "line 5: MCP server 'a': unknown key 'autoStart'",
        ),
        ('{"mcpServers": {"a": {"type": "sse", "url": "http://h/sse"}}}', "old SSE transport"),
        ('{"mcpServers": {"a": {"type": "carrier-pigeon", "url": "http://h"}}}', "unknown type"),
        ('{"mcpServers": {"a": "npx server"}}', "must be an object"),
        ('{"mcpServers": {"a": {"type": ["stdio"], "command": "x"}}}', "unknown type"),
        ('{"mcpServers": {"a": {"command": "x", "disabled": "false"}}}', "disabled must be true or false"),
        ('{"mcpServers": ' + "[" * 100_000 + "]" * 100_000 + "}", "not valid JSON"),
        ('{"mcpServers": {"a": {"command": "x", "tool_timeout": 1' + "0" * 5000 + "}}}", "not valid JSON"),
        ('{"mcpServers": {"a.b": {"command": "x"}, "a_b": {"command": "y"}}}', "same tool prefix mcp__a_b__"),
    ],
    ids=[
        "trailing-comma",
        "no-servers",
        "unknown-key",
        "sse",
        "unknown-type",
        "not-object",
        "type-list",
        "disabled-string",
        "nested-deep",
        "huge-number",
        "names-clash",
    ],
)
def test_bad_json_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        settings_from(tmp_path, "", path)
    assert str(path) in caught.value.one_line()
    assert message in caught.value.one_line()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_a_json_file_that_is_a_fifo_or_a_device_is_refused_unread(tmp_path: Path) -> None:
    fifo = tmp_path / "mcp.json"
    os.mkfifo(fifo)  # no writer: opening it for reading the usual way waits for ever
    for path in (fifo, Path("/dev/zero")):
        with pytest.raises(ConfigError, match="not a regular file"):
            settings_from(tmp_path, "", path)


def test_missing_json_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        settings_from(tmp_path, "", tmp_path / "nope.json")


def test_acp_server_list() -> None:
    servers = servers_from_acp(
        [
            {"name": "fs", "command": "npx", "args": ["-y", "srv"], "env": [{"name": "A", "value": "1"}]},
            {"type": "http", "name": "web", "url": "https://h/mcp", "headers": [{"name": "X", "value": "y"}]},
        ]
    )
    assert servers["fs"] == McpServerConfig(command="npx", args=("-y", "srv"), env={"A": "1"})
    assert servers["web"].headers == {"X": "y"}
    with pytest.raises(ConfigError, match="same name"):
        servers_from_acp([{"name": "a", "command": "x"}, {"name": "a", "command": "y"}])
    with pytest.raises(ConfigError, match="give either command"):
        servers_from_acp([{"name": "a"}])


def test_tool_names_are_sanitized_cut_and_unique() -> None:
    assert tool_name("git hub", "create.issue") == "mcp__git_hub__create_issue"
    long = tool_name("server", "x" * 100)
    assert len(long) == 64
    assert long.startswith("mcp__server__xxx")

    class Spec:
        def __init__(self, name: str) -> None:
            self.name, self.description, self.input_schema, self.read_only = name, "", {}, True

    tools = build_tools(
        "s", McpServerConfig(command="x"), [Spec("a" * 70 + "1"), Spec("a" * 70 + "2")], never
    )
    names = [tool.name for tool in tools]
    assert len(set(names)) == 2
    assert all(len(name) <= 64 for name in names)
    assert tools[0].parameters == {"type": "object", "properties": {}}
    assert tools[0].description == "a" * 70 + "1 (MCP server s)"


def test_schema_normalized_and_open_arguments_passed_on() -> None:
    assert normalize_schema({"$schema": "x", "properties": {"a": {"type": "integer"}}}) == {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
    }

    class Spec:
        name, description, read_only = "t", "d", False
        input_schema = {"type": "object", "properties": {"n": {"type": "integer"}}}

    [tool] = build_tools("s", McpServerConfig(command="x", trusted=True), [Spec()], never)
    assert tool.parse_arguments('{"n": "3", "extra": true}') == {"n": 3, "extra": True}
    assert tool.mutating
    assert tool.preapproved


def test_results_rendering() -> None:
    png = {"type": "image", "mimeType": "image/png", "data": "A" * 16_000}
    blob = {
        "type": "resource",
        "resource": {"uri": "file:///a.bin", "mimeType": "application/zip", "blob": "QUJD"},
    }
    text = {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}}
    link = {"type": "resource_link", "name": "a", "uri": "file:///a"}
    result = {"content": [{"type": "text", "text": "one"}, png, blob, text, link]}
    assert render_result(result) == (
        "one\n[image: image/png, 12 kB]\n[resource: file:///a.bin, application/zip, 3 bytes]\n"
        "[resource: file:///a.txt]\nhello\n[resource link: a file:///a]"
    )
    assert render_result({"content": [], "structuredContent": {"x": 1}}) == '{\n  "x": 1\n}'
    assert render_result({"content": [{"type": "text", "text": "{}"}], "structuredContent": {}}) == "{}"
    assert render_result({"content": []}) == "(no output)"


def test_variables_expand_from_the_environment() -> None:
    from nanohermes.config.mcp_config import expand_variables

    environ = {"TOKEN": "s3cret", "HOST": "example.com", "EMPTY": ""}
    web = McpServerConfig(url="https://${HOST}/mcp", headers={"Authorization": "Bearer ${TOKEN}"})
    expanded = expand_variables(web, environ)
    assert (expanded.url, expanded.headers) == ("https://example.com/mcp", {"Authorization": "Bearer s3cret"})
    assert web.headers == {"Authorization": "Bearer ${TOKEN}"}  # the config itself keeps the reference
    local = McpServerConfig(
        command="${HOME_BIN:-/usr/bin}/tool",
        args=("--port", "${PORT:-8080}", "$TOKEN", "${EMPTY:-fallback}"),
        env={"API_KEY": "${TOKEN}"},
        cwd=Path("${HOST}"),
    )
    done = expand_variables(local, environ)
    assert done.command == "/usr/bin/tool"
    assert done.args == ("--port", "8080", "$TOKEN", "fallback")  # only the ${…} form expands
    assert (done.env, done.cwd) == ({"API_KEY": "s3cret"}, Path("example.com"))
    with pytest.raises(ConfigError, match=r"environment variable MISSING is not set"):
        expand_variables(McpServerConfig(command="x", env={"K": "${MISSING}"}), environ)
