"""What a tool call is about, in a few words, for every front end (terminal lines, editor titles)."""

from __future__ import annotations

import json
from typing import Any

from nanohermes.core.errors import JSON_ERRORS
from nanohermes.core.types import ToolCall, shorten

KEY_ARGUMENTS = ("path", "command", "pattern", "query", "glob", "id", "description", "kind", "text")
MCP_PREFIX = "mcp__"


def call_arguments(call: ToolCall) -> dict[str, Any]:
    """{} when they are not a JSON object (the runner reports that)."""
    try:
        args = json.loads(call.arguments or "{}")
    except JSON_ERRORS:
        return {}
    return args if isinstance(args, dict) else {}


def key_argument(call: ToolCall, width: int = 60) -> str:
    try:
        arguments = json.loads(call.arguments or "{}")
    except JSON_ERRORS:
        return shorten(call.arguments, width)
    return _key_of(arguments, width) if isinstance(arguments, dict) else ""


def _key_of(arguments: dict[str, Any], width: int) -> str:
    for name in KEY_ARGUMENTS:
        value = arguments.get(name)
        if isinstance(value, str) and value:
            return shorten(value, width)
    return ""


def tool_title(name: str, args: dict[str, Any]) -> str:
    """e.g. "Edit src/app.py", "`pytest -q`", "docs: search ranking" (an MCP tool)."""
    path = str(args.get("path") or "")
    titles = {
        "read_file": f"Read {path}",
        "write_file": f"Write {path}",
        "edit_file": f"Edit {path}",
        "list_files": f"List {path or '.'}" + (f" ({args['glob']})" if args.get("glob") else ""),
        "grep": f"grep {args.get('pattern', '')!r}" + (f" in {path}" if path else ""),
        "run_shell": f"`{' '.join(str(args.get('command', '')).split())[:200]}`",
        "memory_save": "Save a memory",
        "memory_search": f"Search memory: {args.get('query', '')}",
        "memory_forget": f"Forget memory {args.get('id', '')}",
        "task": f"Task: {args.get('agent') or ''}".rstrip(": "),
    }
    if name in titles:
        return titles[name]
    server, _, tool = name.removeprefix(MCP_PREFIX).partition("__")
    if name.startswith(MCP_PREFIX) and tool:
        key = _key_of(args, 80)
        return f"{server}: {tool}" + (f" {key}" if key else "")
    return name
