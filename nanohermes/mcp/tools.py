"""A server's tools as ordinary `Tool` objects named `mcp__<server>__<tool>` (≤ 64 characters,
unique), their input schemas made acceptable to model APIs, their results made into text. Only
`readOnlyHint: true` makes a reading tool; a `trusted` server's tools run without asking."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from nanohermes.config.mcp_config import McpServerConfig, tool_name, with_hash
from nanohermes.core.cancel import result_of
from nanohermes.tools.base import CallContext, Tool

MAX_DESCRIPTION_CHARS = 2000  # cut there: every request to the model carries it
MAX_SCHEMA_CHARS = 32_000  # a longer input schema (as JSON) leaves its tool out: a cut one would break
CONTEXT_ARG = "__nanohermes_context"  # the runner passes the CallContext in it (set last: nothing clashes)


@dataclass(frozen=True)
class ListedTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool


Starter = Callable[[str, dict[str, Any]], Future[str]]  # McpManager.submit for one server


def _call_remote(starter: Starter, remote: str, /, **arguments: Any) -> str:
    context = arguments.pop(CONTEXT_ARG, None)
    return result_of(starter(remote, arguments), context.cancel if isinstance(context, CallContext) else None)


def build_tools(
    server: str, config: McpServerConfig, listed: Iterable[ListedTool], starter: Starter
) -> list[Tool]:
    tools: list[Tool] = []
    taken: set[str] = set()
    for spec in listed:
        name = tool_name(server, spec.name)
        name = with_hash(name, spec.name) if name in taken else name  # two cut or sanitized alike
        taken.add(name)
        parameters = normalize_schema(spec.input_schema)
        description = spec.description.strip() or f"{spec.name} (MCP server {server})"
        if len(description) > MAX_DESCRIPTION_CHARS:
            description = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
        tools.append(
            Tool(
                name=name,
                description=description,
                parameters=parameters,
                func=functools.partial(_call_remote, starter, spec.name),
                start=functools.partial(starter, spec.name),
                mutating=not spec.read_only,
                summary_arg=next(iter(parameters.get("required") or parameters["properties"]), None),
                approval_kind=name,
                context_arg=CONTEXT_ARG,
                extra_arguments=parameters.get("additionalProperties") is not False,
                preapproved=config.trusted,
            )
        )
    return tools


TOO_LONG = f"input schema over {MAX_SCHEMA_CHARS:,} characters"
NOT_JSON = "input schema holds NaN or Infinity, which JSON cannot carry"
"""The SDK's parser takes them; the model's API would refuse every request while the tool is offered."""


def unusable(listed: Iterable[ListedTool]) -> dict[str, str]:
    """Tools that cannot be offered for their input schema, name → why."""
    found: dict[str, str] = {}
    for spec in listed:
        try:
            if len(json.dumps(spec.input_schema, allow_nan=False)) > MAX_SCHEMA_CHARS:
                found[spec.name] = TOO_LONG
        except ValueError:
            found[spec.name] = NOT_JSON
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


def render_result(result: dict[str, Any], empty: str = "(no output)") -> str:
    """The text of a CallToolResult's JSON form: binary content named with its type and size, never
    pasted as base64; structured content as JSON when no text part carries it already."""
    content = result.get("content") or []
    text = "\n".join(rendered for rendered in map(render_part, content) if rendered)
    structured = result.get("structuredContent")
    said = any(part.get("type") == "text" and part.get("text") for part in content)
    if structured is not None and not said:
        rendered = json.dumps(structured, ensure_ascii=False, indent=2, default=str)
        text = f"{text}\n{rendered}" if text else rendered
    return text or empty


def render_part(part: dict[str, Any]) -> str:
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text") or "")
    if kind in ("image", "audio"):
        return f"[{kind}: {part.get('mimeType') or 'unknown type'}, {_size(part.get('data'))}]"
    if kind == "resource":
        resource = part.get("resource") or {}
        uri, text = resource.get("uri"), resource.get("text")
        if text is not None:
            return f"[resource: {uri}]\n{text}"
        return f"[resource: {uri}, {resource.get('mimeType') or 'binary'}, {_size(resource.get('blob'))}]"
    if kind == "resource_link":
        mime = part.get("mimeType")
        detail = f", {mime}" if mime else ""
        return f"[resource link: {part.get('name')} {part.get('uri')}{detail}]"
    return f"[{kind or 'unknown'} content]"


def _size(base64: Any) -> str:
    text = str(base64 or "").strip()
    count = max(0, len(text) * 3 // 4 - text[-2:].count("="))
    if count < 1000:
        return f"{count} bytes"
    if count < 1_000_000:
        return f"{count / 1000:.0f} kB"
    return f"{count / 1_000_000:.1f} MB"


COMBINERS = ("anyOf", "oneOf", "allOf")
_DROPPED = frozenset({"$schema", "enum", "not", *COMBINERS})
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SUBSCHEMA_LISTS = (*COMBINERS, "prefixItems")


def normalize_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The server's input schema as a function's parameters: an object with `properties`.

    OpenAI-compatible APIs refuse a whole request over one schema whose top level is not an object or
    has `anyOf`/`oneOf`/`allOf`/`enum`/`not`, or with an array without `items`: combiner branches lend
    their properties to the top (only `allOf`'s stay required), an array gets `items: {}`, a boolean
    subschema becomes `{}`."""
    parameters = {key: value for key, value in schema.items() if key not in _DROPPED}
    parameters["type"] = "object"
    properties = dict(schema["properties"]) if isinstance(schema.get("properties"), dict) else {}
    required = list(schema["required"]) if isinstance(schema.get("required"), list) else []
    for combiner in COMBINERS:
        branches = schema.get(combiner)
        for branch in branches if isinstance(branches, list) else []:
            if not isinstance(branch, dict) or not isinstance(branch.get("properties"), dict):
                continue
            for name, subschema in branch["properties"].items():
                properties.setdefault(name, subschema)
            if combiner == "allOf" and isinstance(branch.get("required"), list):
                required += [name for name in branch["required"] if name not in required]
    parameters["properties"] = {str(name): value for name, value in properties.items()}
    parameters.pop("required", None)
    if required:
        parameters["required"] = [str(name) for name in required]
    return _subschema(parameters)


def _subschema(schema: Any) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {}  # `true` (anything) or a malformed entry
    fixed = dict(schema)
    kinds = fixed.get("type")
    if (kinds == "array" or (isinstance(kinds, list) and "array" in kinds)) and "items" not in fixed:
        fixed["items"] = {}
    for key in _SUBSCHEMA_MAPS:
        if isinstance(fixed.get(key), dict):
            fixed[key] = {name: _subschema(value) for name, value in fixed[key].items()}
    for key in _SUBSCHEMA_LISTS:
        if isinstance(fixed.get(key), list):
            fixed[key] = [_subschema(value) for value in fixed[key]]
    for key in ("items", "additionalProperties", "not"):
        if isinstance(fixed.get(key), dict):
            fixed[key] = _subschema(fixed[key])
    return fixed
