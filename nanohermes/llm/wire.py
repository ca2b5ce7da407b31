"""The outgoing request: history messages cleaned into what strict servers accept, and the JSON body.

Strict servers (vLLM, Mistral, DeepSeek, Groq) reject a request unless: an assistant message with tool
calls has `content: ""`; arguments are JSON text (empty → `{}`); tool results are strings; every call
has a result right after its message (a missing one, after a crash, becomes an ERROR result). Reasoning
is sent back only with `send_reasoning` (DeepSeek thinking mode with tools).
"""

from __future__ import annotations

import json
from typing import Any

from nanohermes.core.types import Message, message_text, valid_text

MISSING_RESULT = "ERROR: no result was recorded for this tool call (the turn was interrupted)"
REASONING_KEYS = ("reasoning_content", "reasoning")


def prepare_messages(messages: list[Message], *, send_reasoning: bool = False) -> list[Message]:
    out: list[Message] = []
    pending: list[str] = []  # call ids of the last assistant message still waiting for a result
    called: set[str] = set()  # call ids of the assistant message the tool results here follow
    for message in messages:
        role = message.get("role")
        if role == "tool" and str(message.get("tool_call_id") or "") not in called:
            continue  # answers no call (a hand-edited session): servers refuse the whole request (400)
        if role != "tool":  # the results of the calls before are over
            out.extend(_missing_result(call_id) for call_id in pending)
            pending, called = [], set()
        clean = dict(message)
        if not send_reasoning:
            for key in REASONING_KEYS:
                clean.pop(key, None)
        if role == "assistant":
            calls = [_clean_call(call) for call in clean.get("tool_calls") or [] if isinstance(call, dict)]
            if calls:
                clean["tool_calls"] = calls
                clean["content"] = message_text(clean)
                pending = [call["id"] for call in calls]
                called = set(pending)
            else:
                clean.pop("tool_calls", None)
                if clean.get("content") is None:
                    clean["content"] = ""
        elif role == "tool":
            clean["content"] = _as_text(clean.get("content"))
            call_id = clean.get("tool_call_id")
            if call_id in pending:
                pending.remove(call_id)
        out.append(clean)
    out.extend(_missing_result(call_id) for call_id in pending)
    return out


def _clean_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    function = dict(function) if isinstance(function, dict) else {}
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = "{}" if arguments is None else json.dumps(arguments, ensure_ascii=False)
    function["arguments"] = arguments if arguments.strip() else "{}"
    function["name"] = function.get("name") if isinstance(function.get("name"), str) else ""
    return {**call, "id": str(call.get("id") or ""), "type": "function", "function": function}


def _as_text(content: Any) -> str:
    if content is None or isinstance(content, str | list):
        return message_text({"content": content})
    return json.dumps(content, ensure_ascii=False)


def _missing_result(call_id: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": MISSING_RESULT}


def build_body(
    model: str,
    messages: list[Message],
    tools: list[dict[str, Any]] | None,
    stream: bool,
    send_reasoning: bool,
    max_tokens: int | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": prepare_messages(messages, send_reasoning=send_reasoning),
        "stream": stream,
    }
    if tools:
        body["tools"] = tools
        # Explicit, because some servers (llama-cpp-python's chatml-function-calling) leave the tools
        # out of the prompt without it. A server that rejects the field gets the request again without.
        body["tool_choice"] = "auto"
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


OPTIONAL_FIELDS = ("stream_options", "tool_choice", "max_tokens")


def rejected_optional_field(status: int, text: str, body: dict[str, Any]) -> str | None:
    """The optional field an older server's 400/422 names: the request is sent again without it."""
    if status not in (400, 422):
        return None
    return next((name for name in OPTIONAL_FIELDS if name in body and name in text), None)


def body_bytes(body: dict[str, Any]) -> bytes:
    """A request body as UTF-8 JSON. A lone surrogate (a reply's JSON `"\\ud800"`, kept in the
    history; a file name that is not UTF-8) has no UTF-8 form: it is sent as U+FFFD rather than
    failing every later request of the session."""
    return valid_text(json.dumps(body, ensure_ascii=False)).encode("utf-8")
