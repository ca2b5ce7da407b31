"""What one tool call leaves: its result (capped), a failure as an `ERROR: …` text (never raised),
its summary."""

from __future__ import annotations

import concurrent.futures
import contextlib
from typing import Any

from nanohermes.core.errors import INTERRUPTED, Cancelled, NanoHermesError
from nanohermes.core.types import ToolCall, ToolResult, shorten
from nanohermes.tools.base import Tool


def cap_output(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, keeping its head and tail around a note."""
    if len(text) <= limit:
        return text
    keep = max(0, limit - 50)
    head = keep // 2
    tail = keep - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[… {omitted} characters omitted …]\n{text[len(text) - tail :]}"


def make_result(call: ToolCall, content: str, ok: bool = True, images: tuple[str, ...] = ()) -> ToolResult:
    return ToolResult(call_id=call.id, name=call.name, content=content, ok=ok, images=images)


def done(result: ToolResult) -> concurrent.futures.Future[ToolResult]:
    future: concurrent.futures.Future[ToolResult] = concurrent.futures.Future()
    future.set_result(result)
    return future


def failure(tool: Tool, err: BaseException) -> str:
    if isinstance(err, Cancelled | concurrent.futures.CancelledError):
        return INTERRUPTED
    if isinstance(err, NanoHermesError):
        return f"ERROR: {err.one_line()}"
    if isinstance(err, OSError):
        where = f": {err.filename}" if err.filename else ""
        return f"ERROR: {err.strerror or err}{where}"
    reason = " ".join(str(err).split())
    return f"ERROR: {tool.name} failed: {type(err).__name__}: {reason}"


def start_remote(
    call: ToolCall, tool: Tool, args: dict[str, Any], limit: int
) -> concurrent.futures.Future[ToolResult]:
    """Start a `Tool.start` call (an MCP server's) with no worker thread waiting on it; cancelling the
    returned future cancels the call."""
    assert tool.start is not None
    try:
        inner = tool.start(args)
    except Exception as err:  # refused before it started: the same ERROR results `func` gives
        return done(make_result(call, cap_output(failure(tool, err), limit), ok=False))
    outer: concurrent.futures.Future[ToolResult] = concurrent.futures.Future()

    def finish(finished: concurrent.futures.Future[str]) -> None:
        try:
            content, ok = str(finished.result()), True
        except BaseException as error:  # cancelled too: failure() says interrupted
            content, ok = failure(tool, error), False
        with contextlib.suppress(concurrent.futures.InvalidStateError):  # cancelled meanwhile
            outer.set_result(make_result(call, cap_output(content, limit), ok))

    outer.add_done_callback(lambda future: inner.cancel() if future.cancelled() else None)
    inner.add_done_callback(finish)
    return outer


REPORTING_TOOLS = frozenset({"write_file", "edit_file"})  # their one-line report is the outcome


def finish_summary(result: ToolResult) -> str:
    """Outcome and size, e.g. "ok · 12 lines, 340 chars" or "error · old text not found …"."""
    content = result.content
    if content == INTERRUPTED:
        return "interrupted"
    first = content.split("\n", 1)[0]
    lines = content.count("\n") + 1
    size = f"{lines} {'line' if lines == 1 else 'lines'}, {len(content)} chars"
    if result.ok and first.startswith(("exit code:", "timed out", "killed by signal")):
        return f"{first} · {size}"
    if result.ok and result.name in REPORTING_TOOLS:
        return f"ok · {shorten(first, 100)}"  # its own one-line report says more than its size
    if result.ok:
        return f"ok · {size}"
    outcome = "refused" if first.startswith("refused") or "was refused" in first else "error"
    return f"{outcome} · {shorten(first.removeprefix('ERROR: '), 100)}"
