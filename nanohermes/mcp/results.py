"""A tool call's result as the text the model sees.

Text parts are joined; structured content is JSON (when no text part carries it already: servers
SHOULD send both); images, audio and blobs are named with their type and size, never pasted as base64;
resources show their URI (and their text, when they are text). An `isError` result is the caller's
business (it becomes an `ERROR:` result). Works on the SDK's pydantic objects or plain dicts alike.
"""

from __future__ import annotations

import json
from typing import Any

NO_OUTPUT = "(no output)"


def render_result(result: Any) -> str:
    """The text of a CallToolResult (content parts, else structured content)."""
    parts = [render_part(part) for part in _get(result, "content") or []]
    text = "\n".join(part for part in parts if part)
    structured = _get(result, "structured_content", "structuredContent")
    if structured is not None and not any(_is_text(part) for part in _get(result, "content") or []):
        rendered = json.dumps(structured, ensure_ascii=False, indent=2, default=str)
        text = f"{text}\n{rendered}" if text else rendered
    return text or NO_OUTPUT


def render_part(part: Any) -> str:
    kind = _get(part, "type")
    if kind == "text":
        return str(_get(part, "text") or "")
    if kind in ("image", "audio"):
        mime = _get(part, "mime_type", "mimeType") or "unknown type"
        return f"[{kind}: {mime}, {_size(_base64_bytes(_get(part, 'data')))}]"
    if kind == "resource":
        return _render_resource(_get(part, "resource"))
    if kind == "resource_link":
        mime = _get(part, "mime_type", "mimeType")
        detail = f", {mime}" if mime else ""
        return f"[resource link: {_get(part, 'name')} {_get(part, 'uri')}{detail}]"
    return f"[{kind or 'unknown'} content]"


def _render_resource(resource: Any) -> str:
    uri = _get(resource, "uri")
    mime = _get(resource, "mime_type", "mimeType")
    text = _get(resource, "text")
    if text is not None:
        return f"[resource: {uri}]\n{text}"
    size = _size(_base64_bytes(_get(resource, "blob")))
    return f"[resource: {uri}, {mime or 'binary'}, {size}]"


def _is_text(part: Any) -> bool:
    return _get(part, "type") == "text" and bool(_get(part, "text"))


def _get(obj: Any, *names: str) -> Any:
    for name in names:
        value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
        if value is not None:
            return value
    return None


def _base64_bytes(data: Any) -> int:
    """Decoded size of a base64 string, without decoding it."""
    if isinstance(data, bytes | bytearray):
        return len(data)
    text = str(data or "").strip()
    return max(0, len(text) * 3 // 4 - text[-2:].count("="))


def _size(count: int) -> str:
    if count < 1000:
        return f"{count} bytes"
    if count < 1_000_000:
        return f"{count / 1000:.0f} kB"
    return f"{count / 1_000_000:.1f} MB"
