"""What a slash command may touch (its context), apart from the command table that uses it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.text import Text

from nanohermes.ui.safe_text import terminal_safe

if TYPE_CHECKING:
    from rich.console import Console

    from nanohermes.agent.custom_commands import CustomCommand
    from nanohermes.core.protocols import Approver
    from nanohermes.ui.seams import RuntimeLike
    from nanohermes.ui.turn import EventSource


@dataclass
class CommandContext:
    """`run_events` runs an agent operation like a turn (worker thread, rendered, Ctrl-C cancels it)."""

    runtime_source: Callable[[], RuntimeLike]
    console: Console
    run_events: Callable[[EventSource], object]
    permission: str
    approver: Approver  # asks a yes/no question (/undo over later edits)
    exit_requested: bool = False
    custom: Mapping[str, CustomCommand] = field(default_factory=dict)  # `.nanohermes/commands/NAME.md`

    @property
    def runtime(self) -> RuntimeLike:
        """Waits while the REPL builds it in the background."""
        return self.runtime_source()

    def say(self, text: str, style: str = "") -> None:
        self.console.print(Text(terminal_safe(text), style=style), overflow="fold")

    def fail(self, text: str) -> None:
        self.say(text, "red")


Handler = Callable[[CommandContext, str], None]
