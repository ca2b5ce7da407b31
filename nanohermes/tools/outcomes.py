"""How one tool call runs and what it leaves: the runner's dispatch helpers.

    pool = LazyPool(workers)            # worker threads, made only when a call needs one
    future = start_remote(call, tool, args, limit)   # a `Tool.start` call: no worker waits on it
    content, ok = invoke(tool, kwargs)  # a call in a worker; every failure is an `ERROR: …` content

Results are capped at `tool_output_chars` (`cap_output`) and summed up for ToolFinished
(`finish_summary`). Nothing here raises for a tool's failure.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
from collections.abc import Callable
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


def make_result(call: ToolCall, content: str, ok: bool = True) -> ToolResult:
    return ToolResult(call_id=call.id, name=call.name, content=content, ok=ok)


def invoke(tool: Tool, kwargs: dict[str, Any]) -> tuple[str, bool]:
    """(content, ok) of one blocking call; every failure is an `ERROR: …` content."""
    try:
        return str(tool.func(**kwargs)), True
    except Exception as err:  # a bug in a tool must not end the turn either: it is reported
        return failure(tool, err), False


def failure(tool: Tool, err: BaseException) -> str:
    """The result content of a call that raised `err`."""
    if isinstance(err, Cancelled | concurrent.futures.CancelledError):
        return INTERRUPTED
    if isinstance(err, NanoHermesError):
        return f"ERROR: {err.one_line()}"
    if isinstance(err, OSError):
        where = f": {err.filename}" if err.filename else ""
        return f"ERROR: {err.strerror or err}{where}"
    reason = " ".join(str(err).split())  # a bug in a tool: report it to the model
    return f"ERROR: {tool.name} failed: {type(err).__name__}: {reason}"


def start_remote(
    call: ToolCall, tool: Tool, args: dict[str, Any], limit: int
) -> concurrent.futures.Future[ToolResult]:
    """Start a `Tool.start` call. Its result is made and capped by the thread that finishes the call
    (the MCP event loop), so the runner's thread is woken once, with the result ready. Cancelling
    the returned future cancels the call."""
    assert tool.start is not None
    outer: concurrent.futures.Future[ToolResult] = concurrent.futures.Future()
    try:
        inner = tool.start(args)
    except Exception as err:  # refused before it started: the same ERROR results `func` gives
        outer.set_result(make_result(call, cap_output(failure(tool, err), limit), ok=False))
        return outer

    def finish(done: concurrent.futures.Future[str]) -> None:
        error = None if done.cancelled() else done.exception()
        if done.cancelled() or error is not None:
            content, ok = (INTERRUPTED if error is None else failure(tool, error)), False
        else:
            content, ok = str(done.result()), True
        with contextlib.suppress(concurrent.futures.InvalidStateError):  # cancelled meanwhile
            outer.set_result(make_result(call, cap_output(content, limit), ok))

    outer.add_done_callback(lambda future: inner.cancel() if future.cancelled() else None)
    inner.add_done_callback(finish)
    return outer


class LazyPool:
    """One batch's worker threads, made only when a call needs one (a remote call needs none)."""

    def __init__(self, workers: int) -> None:
        self._workers = workers
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def submit(self, fn: Callable[..., ToolResult], *args: Any) -> concurrent.futures.Future[ToolResult]:
        if self._pool is None:
            pool = concurrent.futures.ThreadPoolExecutor(self._workers, thread_name_prefix="nanohermes-tool")
            self._pool = pool
        return self._pool.submit(fn, *args)

    def shutdown(self, *, wait: bool) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=wait, cancel_futures=True)


REPORTING_TOOLS = frozenset({"write_file", "edit_file"})
"""Tools whose result is a one-line report ("Created a.txt (1 line, 6 chars)"), shown as the outcome."""


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
    detail = first.removeprefix("ERROR: ")
    return f"{outcome} · {shorten(detail, 100)}"
