"""A server's tools as ordinary `Tool` objects named `mcp__<server>__<tool>` (≤ 64 characters,
unique). Only `readOnlyHint: true` makes a reading tool; a `trusted` server's tools run without asking."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from nanohermes.config.mcp_config import McpServerConfig, tool_name, with_hash
from nanohermes.core.cancel import CancelToken
from nanohermes.mcp.schema import normalize_schema
from nanohermes.tools.base import Tool

MAX_DESCRIPTION_CHARS = 2000
"""A tool's description is cut here: every request to the model carries it."""
MAX_SCHEMA_CHARS = 32_000
"""A tool whose input schema is longer (as JSON) is left out: cutting a schema would break it."""
CANCEL_ARG = "__nanohermes_cancel"
"""The keyword the runner passes the call's CancelToken in (no JSON schema property can clash: the
runner sets it last)."""


@dataclass(frozen=True)
class ListedTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool


Caller = Callable[[str, dict[str, Any], CancelToken], str]
"""(remote tool name, arguments, cancel token) → result text (`McpManager.call`)."""
Starter = Callable[[str, dict[str, Any]], Future[str]]
"""(remote tool name, arguments) → the call's future (`McpManager.submit`)."""


def _call_remote(caller: Caller, remote: str, /, **arguments: Any) -> str:
    """A tool's `func`: the model's arguments go to the server as they are."""
    cancel = arguments.pop(CANCEL_ARG, None)
    return caller(remote, arguments, cancel if isinstance(cancel, CancelToken) else CancelToken())


def build_tools(
    server: str, config: McpServerConfig, listed: Iterable[ListedTool], caller: Caller, starter: Starter
) -> list[Tool]:
    tools: list[Tool] = []
    taken: set[str] = set()
    for spec in listed:
        name = tool_name(server, spec.name)
        name = with_hash(name, spec.name) if name in taken else name  # two cut or sanitized alike
        taken.add(name)
        parameters = normalize_schema(spec.input_schema)
        props: dict[str, Any] = parameters["properties"]
        required = [str(key) for key in parameters.get("required", [])]
        description = spec.description.strip() or f"{spec.name} (MCP server {server})"
        if len(description) > MAX_DESCRIPTION_CHARS:
            description = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
        tools.append(
            Tool(
                name=name,
                description=description,
                parameters=parameters,
                func=functools.partial(_call_remote, caller, spec.name),
                start=functools.partial(starter, spec.name),
                mutating=not spec.read_only,
                summary_arg=required[0] if required else next(iter(props), None),
                approval_kind=name,
                cancel_arg=CANCEL_ARG,
                extra_arguments=parameters.get("additionalProperties") is not False,
                preapproved=config.trusted,
            )
        )
    return tools


TOO_LONG = f"input schema over {MAX_SCHEMA_CHARS:,} characters"
NOT_JSON = "input schema holds NaN or Infinity, which JSON cannot carry"
"""The SDK's parser takes `NaN` and `Infinity`; a request carrying them is not JSON: the model's API
would refuse every request (every turn) while the tool is offered."""


def unusable(listed: Iterable[ListedTool]) -> dict[str, str]:
    """Tools that cannot be offered for their input schema, name → why."""
    found: dict[str, str] = {}
    for spec in listed:
        try:
            size = len(json.dumps(spec.input_schema, allow_nan=False))
        except ValueError:
            found[spec.name] = NOT_JSON
            continue
        if size > MAX_SCHEMA_CHARS:
            found[spec.name] = TOO_LONG
    return found


def offered(servers: Iterable[tuple[str, list[Tool]]], limit: int) -> tuple[list[Tool], int]:
    """The tools of several servers, a name already taken (server `a__b`'s `c`, server `a`'s `b__c`)
    with a hash suffix, up to `limit`; and how many were left out."""
    tools: list[Tool] = []
    seen: set[str] = set()
    left_out = 0
    for server, own in servers:
        for tool in own:
            if len(tools) >= limit:
                left_out += 1
                continue
            if tool.name in seen:
                name = with_hash(tool.name, f"{server}/{tool.name}")
                tool = dataclasses.replace(tool, name=name, approval_kind=name)
            seen.add(tool.name)
            tools.append(tool)
    return tools, left_out
