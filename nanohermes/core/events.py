"""What the agent (and the model client inside it) emits and the UI renders. Stdlib only.

The core never prints: it yields these, and `nanohermes.ui` decides how they look.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from nanohermes.core.types import ToolCall, ToolResult, Usage

NoteLevel = Literal["info", "warning", "error", "debug"]


@dataclass(frozen=True)
class TextDelta:
    """A piece of the assistant's answer as it streams."""

    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's reasoning (`reasoning_content` / `reasoning`), shown dimmed."""

    text: str


@dataclass(frozen=True)
class Retrying:
    """The client is waiting before retrying a request."""

    attempt: int
    delay: float
    reason: str


@dataclass(frozen=True)
class ToolStarted:
    """A tool call was approved and dispatched. `summary` is its key argument, e.g. the path."""

    call: ToolCall
    summary: str = ""


@dataclass(frozen=True)
class ToolFinished:
    """A tool call ended. Emitted in call order; `result.content` is what the model gets."""

    result: ToolResult
    summary: str = ""
    elapsed: float = 0.0


@dataclass(frozen=True)
class Note:
    """A one-line remark for the user: memories saved, compaction, a refused call, an error."""

    text: str
    level: NoteLevel = "info"


@dataclass(frozen=True)
class Compacted:
    """The context was compacted (automatically or by /compact)."""

    before_chars: int
    after_chars: int
    summarized: bool = True

    @property
    def saved(self) -> str:
        """What it saved, for a status line: `1,234 characters saved`, or why nothing was (a summary
        of a few short messages may be longer than they are)."""
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
    """The model's plan (`update_plan`), whole, after each update."""

    steps: tuple[PlanStep, ...]


@dataclass(frozen=True)
class TurnFinished:
    """The turn ended. `completed` is False when interrupted, stopped at max_iterations, or failed."""

    completed: bool
    reason: str = "done"
    usage: Usage = field(default_factory=Usage)
    answer: str = ""
    changed_files: tuple[str, ...] = ()
    """Workspace files this turn changed, as its checkpoint recorded them (empty: none, or off)."""


@dataclass(frozen=True)
class RecalledMemory:
    """One memory in this turn's block (SPEC §3.10): its BM25 score and the query terms that matched."""

    id: str
    kind: str
    text: str
    score: float
    terms: tuple[str, ...] = ()
    scope: str = "global"
    """`global`, `project` (this project's) or `team` (the repository's team memory)."""


@dataclass(frozen=True)
class MemoryRecalled:
    """The memories injected for this turn, best first (only when the block holds any)."""

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
