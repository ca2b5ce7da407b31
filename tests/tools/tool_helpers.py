"""Helpers for the tool tests: a scripted approver and shorthands around ToolRunner.run_calls."""

from __future__ import annotations

import json
from pathlib import Path

from nanohermes.core.cancel import CancelToken
from nanohermes.core.events import Event, ToolFinished, ToolStarted
from nanohermes.core.protocols import ApprovalRequest, Decision
from nanohermes.core.types import ToolCall, ToolResult
from nanohermes.tools import ToolRunner


class FakeApprover:
    """Answers from a script (default: the last answer repeats) and records every request."""

    def __init__(self, *answers: Decision) -> None:
        self.answers = list(answers) or [Decision.YES]
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> Decision:
        self.requests.append(request)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def call(name: str, arguments: str = "{}", call_id: str | None = None) -> ToolCall:
    return ToolCall(id=call_id or f"call_{name}", name=name, arguments=arguments)


def run(runner: ToolRunner, calls: list[ToolCall], cancel: CancelToken | None = None) -> list[Event]:
    return list(runner.run_calls(calls, cancel or CancelToken()))


def results(events: list[Event]) -> list[ToolResult]:
    return [event.result for event in events if isinstance(event, ToolFinished)]


def started(events: list[Event]) -> list[ToolStarted]:
    return [event for event in events if isinstance(event, ToolStarted)]


def args(**values: object) -> str:
    """JSON arguments, as the model sends them."""
    return json.dumps(values)


def auto_runner(workspace: Path, **options: object) -> ToolRunner:
    return ToolRunner(workspace, permission="auto", approver=None, store=None, **options)  # type: ignore[arg-type]
