"""Between nanohermes and ACP shapes: tool calls → `tool_call` updates, prompt blocks → the user's
text, saved history → replayed `session/update`s, session files → `session/list` pages."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from acp import RequestError, schema
from acp.helpers import (
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
    update_user_message_text,
)

from nanohermes.config.mcp_config import McpServerConfig, servers_from_acp
from nanohermes.core.errors import INTERRUPTED, ConfigError
from nanohermes.core.toolcalls import call_arguments, tool_title
from nanohermes.core.types import Message, ToolCall, ToolResult, message_text
from nanohermes.sessions.store import read_header

KINDS: dict[str, schema.ToolKind] = {
    "read_file": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "list_files": "search",
    "grep": "search",
    "memory_search": "search",
    "run_shell": "execute",
    "task": "think",
}
PATH_ARGS = {"read_file", "write_file", "edit_file", "list_files", "grep"}
SHOWN_OUTPUT_CHARS = 8000  # of a tool's result the editor shows (the model gets all of it)
LIST_PAGE = 50

PromptBlock = (
    schema.TextContentBlock
    | schema.ImageContentBlock
    | schema.AudioContentBlock
    | schema.ResourceContentBlock
    | schema.EmbeddedResourceContentBlock
)


def locations(name: str, args: dict[str, Any], workspace: Path) -> list[schema.ToolCallLocation] | None:
    path = args.get("path")
    if name not in PATH_ARGS or not isinstance(path, str) or not path.strip():
        return None
    full = workspace / Path(path.strip()).expanduser()  # an absolute path stays as it is
    offset = args.get("offset") if name == "read_file" else None
    line = offset if isinstance(offset, int) and not isinstance(offset, bool) and offset > 0 else None
    return [schema.ToolCallLocation(path=str(full), line=line)]


def start_content(
    name: str, args: dict[str, Any], workspace: Path
) -> list[schema.ContentToolCallContent | schema.FileEditToolCallContent] | None:
    """Edits as `diff` content (as the change is proposed); a shell command as its command line."""
    located = locations(name, args, workspace)
    if name == "edit_file" and located and isinstance(args.get("new"), str):
        old = args.get("old") if isinstance(args.get("old"), str) else None
        return [tool_diff_content(located[0].path, args["new"], old)]
    if name == "write_file" and located and isinstance(args.get("content"), str):
        return [tool_diff_content(located[0].path, args["content"], None)]
    if name == "run_shell" and isinstance(args.get("command"), str):
        return [tool_content(text_block(f"```sh\n{args['command']}\n```"))]
    return None


def announce(
    acp_id: str, call: ToolCall, workspace: Path, status: schema.ToolCallStatus
) -> schema.ToolCallStart:
    args = call_arguments(call)
    return start_tool_call(
        acp_id,
        tool_title(call.name, args),
        kind=KINDS.get(call.name, "other"),
        status=status,
        content=start_content(call.name, args, workspace),
        locations=locations(call.name, args, workspace),
        raw_input=args or call.arguments,
    )


def permission_call(acp_id: str, call: ToolCall, workspace: Path, title: str) -> schema.ToolCallUpdate:
    """The `toolCall` of a permission request: the call as announced, titled with the question."""
    shown = announce(acp_id, call, workspace, "pending").model_dump(exclude={"session_update"})
    return schema.ToolCallUpdate.model_validate({**shown, "title": title})


def finish(acp_id: str, name: str, result: ToolResult) -> schema.ToolCallProgress:
    """The closing `tool_call_update` (a successful edit keeps its diff instead of the result)."""
    failed = not result.ok or result.content == INTERRUPTED
    text = result.content
    if len(text) > SHOWN_OUTPUT_CHARS:
        text = text[:SHOWN_OUTPUT_CHARS] + f"\n[… {len(text) - SHOWN_OUTPUT_CHARS} more characters]"
    shown = [tool_content(text_block(f"```\n{text}\n```" if name == "run_shell" else text))]
    return update_tool_call(
        acp_id,
        status="failed" if failed else "completed",
        content=shown if failed or KINDS.get(name) != "edit" else None,
        raw_output=result.content,
    )


def mcp_configs(servers: Sequence[Any]) -> tuple[dict[str, McpServerConfig], list[str]]:
    """`mcpServers` as configs, and a note for each server left out (SSE or ACP transport); a bad
    entry is the request's invalid params."""
    items = [server.model_dump(by_alias=True, exclude_none=True) for server in servers]
    notes = [
        f"MCP server {item.get('name')!r} not started: its {item['type'].upper()} transport is not "
        "supported (use stdio or streamable HTTP)"
        for item in items
        if item.get("type") in ("sse", "acp")
    ]
    try:
        return servers_from_acp([item for item in items if item.get("type") not in ("sse", "acp")]), notes
    except ConfigError as err:
        raise RequestError(-32602, err.one_line()) from None


def prompt_text(blocks: Sequence[PromptBlock]) -> str:
    """The user message for a prompt: text as is, file mentions as links, embedded files inline."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, schema.TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, schema.ResourceContentBlock):
            parts.append(f"[@{block.name}]({local_ref(block.uri)})")
        elif isinstance(block, schema.EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, schema.TextResourceContents):
                parts.append(f'\n<context ref="{local_ref(resource.uri)}">\n{resource.text}\n</context>')
            else:
                parts.append(f"[attached binary resource {resource.uri} not shown: text only]")
        else:
            parts.append(f"[{block.type} attachment not shown: this agent reads text only]")
    return "".join(parts).strip()


def local_ref(uri: str) -> str:
    """A `file://` URI as the path the file tools take (`#L10:20` kept); other URIs as they are."""
    parsed = urlsplit(uri)
    if parsed.scheme != "file":
        return uri
    path = unquote(parsed.path)
    return f"{path}#{parsed.fragment}" if parsed.fragment else path


def replay(messages: Sequence[Message], workspace: Path) -> Iterator[Any]:
    names: dict[str, tuple[str, str]] = {}
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "user":
            yield update_user_message_text(message_text(message))
        elif role == "assistant":
            yield from _replay_assistant(index, message, workspace, names)
        elif role == "tool":
            key = str(message.get("tool_call_id") or "")
            acp_id, name = names.pop(key, (f"{index}-{key}", str(message.get("name") or "")))
            content = message_text(message)
            result = ToolResult(key, name, content, ok=not content.startswith(("ERROR", "refused")))
            yield finish(acp_id, name, result)


def _replay_assistant(
    index: int, message: Message, workspace: Path, names: dict[str, tuple[str, str]]
) -> Iterator[Any]:
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning.strip():
        yield update_agent_thought_text(reasoning)
    text = message_text(message)
    if text.strip():
        yield update_agent_message_text(text)
    for raw in message.get("tool_calls") or ():  # their shape was checked as the session was read
        function = raw["function"]
        call = ToolCall(str(raw.get("id") or ""), function["name"], str(function.get("arguments") or ""))
        acp_id = f"{index}-{call.id}"
        names[call.id] = (acp_id, call.name)
        yield announce(acp_id, call, workspace, "in_progress")


def session_list(sessions_dir: Path, cwd: str | None, start: int) -> schema.ListSessionsResponse:
    """A page of the saved sessions (REPL ones too), newest first, after the first `start`."""
    from nanohermes.sessions.paths import recent_session_files

    found = (
        (path, mtime, header)
        for path, mtime in recent_session_files(sessions_dir)
        if (header := read_header(path)) is not None and cwd in (None, header.get("workspace"))
    )
    page = list(itertools.islice(found, start, start + LIST_PAGE + 1))  # one more: is there a next page?
    infos = [
        schema.SessionInfo(
            session_id=path.stem,
            cwd=str(header.get("workspace") or ""),
            title=str(header.get("title") or "") or None,
            updated_at=datetime.fromtimestamp(mtime).astimezone().isoformat(timespec="seconds"),
        )
        for path, mtime, header in page[:LIST_PAGE]
    ]
    more = str(start + LIST_PAGE) if len(page) > LIST_PAGE else None
    return schema.ListSessionsResponse(sessions=infos, next_cursor=more)
