"""`update_plan`: the model keeps a checklist of its steps; each accepted call becomes a PlanUpdated
event after its result."""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Iterator
from typing import Any

from nanohermes.core.errors import ToolError
from nanohermes.core.events import PlanStatus, PlanStep, PlanUpdated
from nanohermes.core.types import ToolCall, ToolResult
from nanohermes.tools.base import Tool, tool_from_function

PLAN_TOOL = "update_plan"
MAX_STEPS = 30
MAX_STEP_CHARS = 300
STATUSES: tuple[str, ...] = typing.get_args(PlanStatus)


def parse_plan(plan: object) -> tuple[PlanStep, ...]:
    """Raises ToolError (one line for the model) for anything that is not a plan."""
    if not isinstance(plan, list) or not plan:
        raise ToolError('plan must be a non-empty list of {"step": text, "status": …} objects')
    if len(plan) > MAX_STEPS:
        raise ToolError(f"a plan has at most {MAX_STEPS} steps, got {len(plan)}; merge some")
    steps = []
    for number, item in enumerate(plan, start=1):
        fields = item if isinstance(item, dict) else {}
        text, status = fields.get("step"), fields.get("status")
        if not isinstance(text, str) or not text.strip():
            raise ToolError(f'plan step {number} needs a non-empty "step" text')
        if len(text) > MAX_STEP_CHARS:
            raise ToolError(f"plan step {number} is longer than {MAX_STEP_CHARS} characters")
        if status not in STATUSES:
            raise ToolError(f"plan step {number}: status must be one of {', '.join(STATUSES)}")
        steps.append(PlanStep(" ".join(text.split()), status))
    if sum(step.status == "in_progress" for step in steps) > 1:
        raise ToolError("at most one plan step may be in_progress")
    return tuple(steps)


def update_plan(plan: list[dict[str, Any]]) -> str:
    """Show the user your plan as a checklist, at most one step in_progress; send the whole plan
    again as steps start and finish."""
    steps = parse_plan(plan)
    done = sum(step.status == "completed" for step in steps)
    return f"plan updated: {done} of {len(steps)} steps completed"


def make_plan_tool() -> Tool:
    tool = tool_from_function(update_plan)
    item = {
        "type": "object",
        "properties": {"step": {"type": "string"}, "status": {"type": "string", "enum": list(STATUSES)}},
        "required": ["step", "status"],
    }
    tool.parameters["properties"]["plan"]["items"] = item
    return dataclasses.replace(tool, summary_arg=None)  # the checklist follows: no argument on its line


def plan_updates(call: ToolCall, result: ToolResult) -> Iterator[PlanUpdated]:
    if call.name == PLAN_TOOL and result.ok:
        yield PlanUpdated(parse_plan(json.loads(call.arguments)["plan"]))
