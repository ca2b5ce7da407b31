"""ACP shapes without a process: a client's mcpServers as configs, tool-call titles."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError, schema

from nanohermes.acp.convert import announce, mcp_configs, prompt_text
from nanohermes.core.toolcalls import tool_title
from nanohermes.core.types import ToolCall


def test_stdio_and_http_servers_become_configs_and_sse_is_left_out_with_a_note() -> None:
    stdio = schema.McpServerStdio(
        name="files", command="npx", args=["-y", "srv"], env=[schema.EnvVariable(name="K", value="v")]
    )
    http = schema.HttpMcpServer(
        type="http", name="docs", url="https://x/mcp", headers=[schema.HttpHeader(name="A", value="b")]
    )
    sse = schema.SseMcpServer(type="sse", name="old", url="https://x/sse", headers=[])
    configs, notes = mcp_configs([stdio, http, sse])
    assert list(configs) == ["files", "docs"]
    assert (configs["files"].command, configs["files"].args, configs["files"].env) == (
        "npx",
        ("-y", "srv"),
        {"K": "v"},
    )
    assert (configs["docs"].url, configs["docs"].headers) == ("https://x/mcp", {"A": "b"})
    assert notes == [
        "MCP server 'old' not started: its SSE transport is not supported (use stdio or streamable HTTP)"
    ]


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ([schema.McpServerStdio(name="a", command=" ", args=[], env=[])], "must not be empty"),
        (
            [schema.McpServerStdio(name="a", command="x", args=[], env=[])] * 2,
            "two servers have the same name",
        ),
        ([schema.McpServerStdio(name=" ", command="x", args=[], env=[])], "a server name is empty"),
    ],
)
def test_a_bad_server_entry_is_invalid_params(servers: list[schema.McpServerStdio], message: str) -> None:
    with pytest.raises(RequestError, match=message):
        mcp_configs(servers)


def test_titles_of_mcp_and_builtin_calls() -> None:
    assert tool_title("mcp__docs__search", {"query": "ranking", "limit": 3}) == "docs: search ranking"
    assert tool_title("mcp__docs__list", {}) == "docs: list"
    assert tool_title("edit_file", {"path": "a.py"}) == "Edit a.py"
    assert tool_title("mcp__", {}) == "mcp__"
    shown = announce("1-c", ToolCall("c", "mcp__docs__search", '{"query": "q"}'), Path("/w"), "pending")
    assert (shown.title, shown.kind) == ("docs: search q", "other")


def test_file_mentions_reach_the_model_as_paths() -> None:
    link = schema.ResourceContentBlock(type="resource_link", name="a b.py", uri="file:///w/src/a%20b.py")
    embedded = schema.EmbeddedResourceContentBlock(
        type="resource",
        resource=schema.TextResourceContents(uri="file:///w/x.py#L2:3", text="y = 2\n"),
    )
    web = schema.ResourceContentBlock(type="resource_link", name="doc", uri="https://example.com/d")
    text = prompt_text([schema.TextContentBlock(type="text", text="look at "), link, embedded, web])
    assert text == (
        'look at [@a b.py](/w/src/a b.py)\n<context ref="/w/x.py#L2:3">\ny = 2\n\n</context>'
        "[@doc](https://example.com/d)"
    )
