"""The seams between layers, as Protocols. Stdlib only.

Tests build real objects with fakes at these seams instead of patching module attributes.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from nanohermes.core.cancel import CancelToken
from nanohermes.core.events import Event, StreamItem
from nanohermes.core.types import ChatResult, Message, ToolCall


class ChatModel(Protocol):
    """What the agent needs from a model endpoint (implemented by `nanohermes.llm.ChatClient`)."""

    def stream(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        *,
        model: str | None = None,
        cancel: CancelToken | None = None,
    ) -> Iterator[StreamItem | ChatResult]:
        """Yield deltas as they arrive, then exactly one ChatResult last. Raises LLMError / Cancelled."""

    def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        *,
        model: str | None = None,
        cancel: CancelToken | None = None,
    ) -> ChatResult:
        """One non-streaming request (distillation, summaries). Raises LLMError / Cancelled."""


class Decision(enum.Enum):
    YES = "yes"
    NO = "no"
    ALWAYS = "always"


@dataclass(frozen=True)
class ApprovalRequest:
    """Asked before a write, an edit or a shell command in `ask` mode."""

    tool: str
    title: str
    detail: str
    """A unified diff for writes and edits, the command line for shell calls."""
    call: ToolCall | None = None
    """The call asking (front ends that show calls by id, e.g. ACP, attach the question to it)."""


class Approver(Protocol):
    """The UI's seam for confirmation. Called from a worker thread; blocks until the user answers.
    Raises `Cancelled` when the user interrupts instead of answering (Ctrl-C): the call, and the
    calls after it, are then interrupted, not declined."""

    def __call__(self, request: ApprovalRequest) -> Decision: ...


class ToolExecutor(Protocol):
    """What the agent needs from the tool layer (implemented by `nanohermes.tools.ToolRunner`)."""

    def schemas(self) -> list[dict[str, Any]]:
        """The `tools` array offered to the model (OpenAI function format)."""

    def names(self) -> set[str]: ...

    def set_permission(self, mode: str) -> None:
        """`ask`, `auto` or `read-only` from now on (/permission)."""

    def run_calls(self, calls: list[ToolCall], cancel: CancelToken) -> Iterator[Event]:
        """Ask approvals one by one, run the calls concurrently, and yield ToolStarted for each
        dispatched call and ToolFinished for every call in call order (refused, invalid and
        interrupted calls included), so the caller can append one tool message per call."""


@dataclass(frozen=True)
class TurnChanges:
    """What a turn changed in the workspace, as its checkpoint recorded it (SPEC §11)."""

    turn: int = 0
    """The checkpoint's number; 0 when nothing was recorded."""
    files: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    """Lines for the user (a fallback in use, a failed snapshot)."""


class ChangeGuard(Protocol):
    """Called by the tool runner before each changing tool call (`nanohermes.checkpoints`)."""

    def before_change(self, path: Path | None, /) -> None: ...


class TurnRecorder(Protocol):
    """The agent's side of checkpoints: turn boundaries, and notes about undone turns for the model."""

    def begin_turn(self, prompt: str, /) -> None: ...

    def end_turn(self) -> TurnChanges: ...

    def model_notes(self) -> list[str]: ...
