"""What the agent and its model client yield and the UI renders (the core never prints). Stdlib only."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from nanohermes.core.types import ToolCall, ToolResult, Usage


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True)
class Retrying:
    attempt: int
    delay: float
    reason: str


@dataclass(frozen=True)
class ToolStarted:
    """A tool call was approved and dispatched; `summary` is its key argument."""

    call: ToolCall
    summary: str = ""


@dataclass(frozen=True)
class ToolFinished:
    """Emitted in call order; `result.content` is what the model gets."""

    result: ToolResult
    summary: str = ""
    elapsed: float = 0.0


@dataclass(frozen=True)
class Note:
    text: str
    level: Literal["info", "warning", "error", "debug"] = "info"


@dataclass(frozen=True)
class Compacted:
    before_chars: int
    after_chars: int
    summarized: bool = True

    @property
    def saved(self) -> str:
        """For a status line (a summary of a few short messages may be longer than they are)."""
        saved = self.before_chars - self.after_chars
        if saved > 0:
            return f"{saved:,} characters saved"
        return "nothing saved: the recent messages it keeps hold nearly all of it"


PlanStatus = Literal["pending", "in_progress", "completed"]


@dataclass(frozen=True)
class PlanStep:
    step: str
    status: PlanStatus


@dataclass(frozen=True)
class PlanUpdated:
    steps: tuple[PlanStep, ...]


@dataclass(frozen=True)
class TurnFinished:
    """`completed` is False when interrupted, stopped at max_iterations, or failed."""

    completed: bool
    reason: str = "done"
    usage: Usage = field(default_factory=Usage)
    answer: str = ""
    changed_files: tuple[str, ...] = ()  # as the turn's checkpoint recorded them


@dataclass(frozen=True)
class RecalledMemory:
    """One memory in this turn's block (SPEC §3.10), with the query terms that matched."""

    id: str
    kind: str
    text: str
    score: float
    terms: tuple[str, ...] = ()
    scope: str = "global"  # or `project`, `team`


@dataclass(frozen=True)
class MemoryRecalled:
    """Best first; only when the block holds any."""

    memories: tuple[RecalledMemory, ...]


Event = (
    TextDelta
    | ReasoningDelta
    | Retrying
    | ToolStarted
    | ToolFinished
    | Note
    | Compacted
    | MemoryRecalled
    | PlanUpdated
    | TurnFinished
)
StreamItem = TextDelta | ReasoningDelta | Retrying
"""What a model stream yields before its final ChatResult."""
