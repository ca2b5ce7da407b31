"""Tools that run elsewhere (`Tool.start`, an MCP server's): started without a worker thread, their
results, failures, caps and cancellation as for any other tool."""

from __future__ import annotations

import concurrent.futures
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tool_helpers import args, auto_runner, call, results, run

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import ToolError
from nanohermes.core.types import ToolResult
from nanohermes.tools import INTERRUPTED, Tool

pytestmark = pytest.mark.timeout(30)
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


class Remote:
    """A tool whose calls are answered by a thread of its own (as the MCP event loop answers)."""

    def __init__(self, answer: Any = "done") -> None:
        self.answer = answer
        self.futures: list[concurrent.futures.Future[str]] = []
        self.threads: list[str] = []

    def start(self, arguments: dict[str, Any]) -> concurrent.futures.Future[str]:
        self.threads.append(threading.current_thread().name)
        future: concurrent.futures.Future[str] = concurrent.futures.Future()
        self.futures.append(future)
        if self.answer is not None:
            threading.Thread(target=self._answer, args=(future, arguments)).start()
        return future

    def _answer(self, future: concurrent.futures.Future[str], arguments: dict[str, Any]) -> None:
        if isinstance(self.answer, BaseException):
            future.set_exception(self.answer)
        else:
            future.set_result(f"{self.answer}: {arguments.get('text')}")

    def tool(self, *, mutating: bool = False) -> Tool:
        def blocking(**_kwargs: Any) -> str:
            raise AssertionError("the runner called the blocking form")

        return Tool("remote", "a remote tool", SCHEMA, blocking, mutating=mutating, start=self.start)


def test_started_in_the_calling_thread_with_no_worker(workspace: Path) -> None:
    remote = Remote()
    runner = auto_runner(workspace, tool_output_chars=100)
    runner.register(remote.tool())
    before = set(threading.enumerate())
    [result] = results(run(runner, [call("remote", args(text="hi"))]))
    assert result == ToolResult(call_id="call_remote", name="remote", content="done: hi", ok=True)
    assert remote.threads == [threading.current_thread().name]
    assert not any(t.name.startswith("nanohermes-tool") for t in set(threading.enumerate()) - before)


def test_failures_and_caps_are_those_of_any_tool(workspace: Path) -> None:
    runner = auto_runner(workspace, tool_output_chars=100)
    runner.register(Remote(ToolError("server said no")).tool())
    [failed] = results(run(runner, [call("remote", args(text="x"))]))
    assert (failed.content, failed.ok) == ("ERROR: server said no", False)
    runner.register(Remote(ValueError("bad\nthing")).tool())
    [bug] = results(run(runner, [call("remote", args(text="x"))]))
    assert bug.content == "ERROR: remote failed: ValueError: bad thing"
    runner.register(Remote("y" * 1000).tool())
    [long] = results(run(runner, [call("remote", args(text="x"))]))
    assert len(long.content) <= 100
    assert "characters omitted" in long.content


def test_refused_at_start_is_an_error_result(workspace: Path) -> None:
    def refuse(_arguments: dict[str, Any]) -> concurrent.futures.Future[str]:
        raise ToolError("MCP server s is not running")

    runner = auto_runner(workspace)
    runner.register(Tool("remote", "d", SCHEMA, lambda **_: "", start=refuse))
    [result] = results(run(runner, [call("remote", args(text="x"))]))
    assert (result.content, result.ok) == ("ERROR: MCP server s is not running", False)


def test_ctrl_c_cancels_the_started_call(workspace: Path) -> None:
    remote = Remote(answer=None)  # never answers by itself
    runner = auto_runner(workspace)
    runner.register(remote.tool())
    cancel = CancelToken()

    def cancel_once_started() -> None:  # not after a delay: on a loaded machine it may come first
        deadline = time.monotonic() + 20
        while not remote.futures and time.monotonic() < deadline:
            time.sleep(0.01)
        cancel.cancel()

    threading.Thread(target=cancel_once_started, daemon=True).start()
    [result] = results(run(runner, [call("remote", args(text="x"))], cancel))
    assert (result.content, result.ok) == (INTERRUPTED, False)
    assert remote.futures[0].cancelled()  # so the call itself is cancelled (MCP: notifications/cancelled)


def test_a_writing_remote_call_takes_its_checkpoint_first(workspace: Path) -> None:
    order: list[str] = []

    class Guard:
        def before_change(self, path: Path | None) -> None:
            order.append(f"checkpoint {path}")

    def blocking(**kwargs: Any) -> str:  # a worker takes the checkpoint, then makes the call
        order.append(f"call {kwargs}")
        return "done"

    runner = auto_runner(workspace, checkpoints=Guard())
    runner.register(Tool("remote", "d", SCHEMA, blocking, mutating=True, start=Remote().start))
    [result] = results(run(runner, [call("remote", args(text="x"))]))
    assert result.ok
    assert order == ["checkpoint None", "call {'text': 'x'}"]


def test_ctrl_c_during_the_checkpoint_stops_the_write_it_was_taken_for(workspace: Path) -> None:
    cancel = CancelToken()
    written = threading.Event()

    class SlowGuard:  # the first snapshot of a big workspace takes seconds: Ctrl-C may come then
        def before_change(self, path: Path | None) -> None:
            cancel.cancel()

    def write(**_: Any) -> str:
        written.set()
        return "written"

    runner = auto_runner(workspace, checkpoints=SlowGuard())
    runner.register(Tool("writer", "d", SCHEMA, write, mutating=True))
    [result] = results(run(runner, [call("writer", args(text="x"))], cancel))
    assert (result.content, result.ok) == (INTERRUPTED, False)
    # told "interrupted", so nothing may be written: the worker must not go on after the checkpoint
    assert not written.wait(2)
