"""MCP tools through the real ToolRunner: a read-only and a writing tool under each permission mode."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from mcp_helpers import Managers, demo_stdio, wait_for

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import INTERRUPTED
from nanohermes.core.events import ToolFinished
from nanohermes.core.protocols import ApprovalRequest, Decision
from nanohermes.core.types import ToolCall, ToolResult
from nanohermes.tools.runner import ToolRunner


class Approver:
    """Answers in order (the last one repeats); keeps the requests."""

    def __init__(self, *answers: Decision) -> None:
        self.answers, self.requests = list(answers) or [Decision.YES], list[ApprovalRequest]()

    def __call__(self, request: ApprovalRequest) -> Decision:
        self.requests.append(request)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


pytestmark = pytest.mark.timeout(90)
ECHO, WRITE = "mcp__demo__echo", "mcp__demo__write_note"


def runner_for(
    managers: Managers, workspace: Path, permission: str, approver: Approver | None, **cfg: object
) -> ToolRunner:
    manager = managers({"demo": demo_stdio(**cfg)}, cwd=workspace)  # type: ignore[arg-type]
    runner = ToolRunner(
        workspace, permission=permission, approver=approver, store=None, tool_output_chars=300
    )
    runner.add_source(manager.tools)
    return runner


def run(runner: ToolRunner, tool: str, /, **arguments: object) -> ToolResult:
    calls = [ToolCall(id=f"call_{tool}", name=tool, arguments=json.dumps(arguments))]
    [result] = [e.result for e in runner.run_calls(calls, CancelToken()) if isinstance(e, ToolFinished)]
    return result


def test_read_only_mode_offers_only_reading_mcp_tools(managers: Managers, tmp_path: Path) -> None:
    runner = runner_for(managers, tmp_path, "read-only", Approver())
    names = runner.names()
    assert ECHO in names
    assert WRITE not in names
    assert run(runner, ECHO, text="hi").content == "echo: hi"
    refused = run(runner, WRITE, name="n.txt", text="x")
    assert not refused.ok
    assert "not available in read-only mode" in refused.content
    assert not (tmp_path / "n.txt").exists()


def test_ask_mode_asks_before_a_writing_tool_only(managers: Managers, tmp_path: Path) -> None:
    approver = Approver(Decision.NO, Decision.YES)
    runner = runner_for(managers, tmp_path, "ask", approver)
    assert run(runner, ECHO, text="hi").content == "echo: hi"
    assert approver.requests == []  # readOnlyHint: no question
    declined = run(runner, WRITE, name="n.txt", text="draft")
    assert declined.content.startswith("refused: the user declined this mcp__demo__write_note call")
    assert not (tmp_path / "n.txt").exists()
    assert run(runner, WRITE, name="n.txt", text="draft").content == "wrote 5 characters to n.txt"
    assert (tmp_path / "n.txt").read_text() == "draft"
    request: ApprovalRequest = approver.requests[0]
    assert request.tool == WRITE
    assert request.title == f"Run {WRITE}"
    assert '"text": "draft"' in request.detail


def test_one_shot_without_yes_refuses_writing_tools(managers: Managers, tmp_path: Path) -> None:
    runner = runner_for(managers, tmp_path, "ask", None)
    assert run(runner, ECHO, text="hi").ok
    refused = run(runner, WRITE, name="n.txt", text="x")
    assert "was refused" in refused.content
    assert "--yes" in refused.content
    assert not (tmp_path / "n.txt").exists()


def test_auto_mode_runs_writing_tools_without_asking(managers: Managers, tmp_path: Path) -> None:
    approver = Approver(Decision.NO)
    runner = runner_for(managers, tmp_path, "auto", approver)
    assert run(runner, WRITE, name="n.txt", text="x").ok
    assert approver.requests == []


def test_trusted_server_never_asks_but_stays_out_of_read_only(managers: Managers, tmp_path: Path) -> None:
    asking = runner_for(managers, tmp_path, "ask", None, trusted=True)
    assert run(asking, WRITE, name="t.txt", text="x").content == "wrote 1 characters to t.txt"
    asking.set_permission("read-only")
    assert WRITE not in asking.names()


def test_tool_error_and_output_cap_reach_the_model(managers: Managers, tmp_path: Path) -> None:
    runner = runner_for(managers, tmp_path, "auto", None)
    failed = run(runner, "mcp__demo__fail", message="quota exceeded")
    assert not failed.ok
    assert failed.content == "ERROR: Error executing tool fail: quota exceeded"  # the server's text
    long = run(runner, ECHO, text="x" * 5000)
    assert len(long.content) <= 300
    assert "characters omitted" in long.content


def test_ctrl_c_through_the_runner_cancels_the_call(managers: Managers, tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    runner = runner_for(managers, tmp_path, "auto", None, marker_dir=markers)
    assert "mcp__demo__hang" in runner.names()  # the server is up
    cancel = CancelToken()
    started = markers / "hang.started"  # cancelled once the server runs the call, not after a delay
    threading.Thread(target=lambda: wait_for(started.exists, 30) and cancel.cancel(), daemon=True).start()
    calls = [ToolCall(id="c1", name="mcp__demo__hang", arguments='{"seconds": 60}')]
    [result] = [e.result for e in runner.run_calls(calls, cancel) if isinstance(e, ToolFinished)]
    assert (result.content, result.ok) == (INTERRUPTED, False)
    assert wait_for(lambda: (markers / "cancelled").exists())  # notifications/cancelled reached it
    assert run(runner, ECHO, text="after").content == "echo: after"
