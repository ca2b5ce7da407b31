"""A tool call's result as the text the model sees: binary content is named with its type and size,
never pasted as base64; structured content is JSON when no text part carries it already."""

from __future__ import annotations

import json
from typing import Any

NO_OUTPUT = "(no output)"


def render_result(result: dict[str, Any]) -> str:
    """The text of a CallToolResult in its JSON form (the SDK's `model_dump(by_alias=True)`)."""
    content = result.get("content") or []
    text = "\n".join(rendered for rendered in map(render_part, content) if rendered)
    structured = result.get("structuredContent")
    said = any(part.get("type") == "text" and part.get("text") for part in content)
    if structured is not None and not said:
        rendered = json.dumps(structured, ensure_ascii=False, indent=2, default=str)
        text = f"{text}\n{rendered}" if text else rendered
    return text or NO_OUTPUT


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
