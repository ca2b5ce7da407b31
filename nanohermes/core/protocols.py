"""What crosses the seams between layers below the agent: approvals (tools ↔ UI) and checkpoints
(tools ↔ checkpoints ↔ agent). Stdlib only."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from nanohermes.core.types import ToolCall


class Decision(enum.Enum):
    YES = "yes"
    NO = "no"
    ALWAYS = "always"


@dataclass(frozen=True)
class ApprovalRequest:
    """Asked before a write, an edit or a shell command in `ask` mode."""

    tool: str
    title: str
    detail: str  # a unified diff for writes and edits, the command line for shell calls
    call: ToolCall | None = None  # ACP attaches the question to the call it shows


class Approver(Protocol):
    """Called from a worker thread; blocks until the user answers. Raises `Cancelled` on Ctrl-C: the
    call, and those after it, are then interrupted, not declined."""

    def __call__(self, request: ApprovalRequest) -> Decision: ...


@dataclass(frozen=True)
class TurnChanges:
    """What a turn changed in the workspace, as its checkpoint recorded it (SPEC §11)."""

    turn: int = 0  # the checkpoint's number; 0 when nothing was recorded
    files: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # for the user: a fallback in use, a failed snapshot


class ChangeGuard(Protocol):
    """Called by the tool runner before each changing tool call (`nanohermes.checkpoints`)."""

    def before_change(self, path: Path | None, /) -> None: ...
