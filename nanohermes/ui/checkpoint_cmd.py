"""/diff, /undo and /checkpoints: what the agent's turns changed, and taking it back (SPEC §11)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from nanohermes.core.errors import NanoHermesError
from nanohermes.core.protocols import ApprovalRequest, Decision
from nanohermes.ui.safe_text import terminal_safe
from nanohermes.ui.undo_cmd import turn_lines

if TYPE_CHECKING:
    from nanohermes.checkpoints import Checkpoints, FileDiff, History
    from nanohermes.ui.command_context import CommandContext

LINE_STYLES = {"+": "green", "-": "red", "@": "cyan"}
STATUS_STYLES = {"added": "green", "deleted": "red", "modified": "yellow"}


def _history(ctx: CommandContext) -> History:
    checkpoints: Checkpoints | None = ctx.runtime.checkpoints
    if checkpoints is None:
        raise NanoHermesError("checkpoints are off (checkpoints = false): there is nothing to show or undo")
    from nanohermes.checkpoints import History

    return History(checkpoints)


def show_diff(ctx: CommandContext, arg: str) -> None:
    """/diff: the last turn's changes; /diff all: every turn's since the session began."""
    which = arg.strip()
    if which not in ("", "all"):
        ctx.fail("usage: /diff [all]")
        return
    turns, diffs = _history(ctx).diff(all_turns=which == "all")
    if not diffs:
        ctx.say("no changes recorded in this session yet" if not turns else "those turns cancel out", "dim")
        return
    numbers = ", ".join(str(turn.number) for turn in turns)
    ctx.say(f"changes of turn {numbers}:" if len(turns) == 1 else f"changes of turns {numbers}:", "dim")
    print_diffs(ctx, diffs)


def print_diffs(ctx: CommandContext, diffs: list[FileDiff]) -> None:
    for diff in diffs:
        path = terminal_safe(diff.path)
        header = Text.assemble((f"{diff.status:<9}", STATUS_STYLES.get(diff.status, "")), (path, "bold"))
        ctx.console.print(header, overflow="fold")
        for line in diff.lines:
            ctx.say(line, LINE_STYLES.get(line[:1], ""))


def undo(ctx: CommandContext, arg: str) -> None:
    """/undo: revert the last turn that changed files."""
    if arg.strip():
        ctx.fail("usage: /undo (reverts one turn per call; `nanohermes undo --to N` goes further)")
        return
    history = _history(ctx)
    plan = history.plan()
    number = plan.turns[0].number
    if plan.conflicts:
        diffs = history.conflict_diffs(plan)
        ctx.say(f"edited after turn {number} (shown: the turn's version → yours now):", "yellow")
        print_diffs(ctx, diffs)
        if not _confirm(ctx, number, plan.conflicts):
            ctx.say("nothing was undone", "dim")
            return
    lines = history.undo(plan, force=True)
    ctx.say(f"undid turn {number} ({plan.turns[0].prompt}):")
    for line in lines:
        ctx.say(f"  {line}", "dim")
    ctx.say("the model will be told with your next message", "dim")


def _confirm(ctx: CommandContext, number: int, conflicts: list[str]) -> bool:
    if ctx.approver is None:
        ctx.fail("cannot ask here: nothing was undone")
        return False
    from nanohermes.checkpoints.journal import shown

    title = f"Overwrite your later edits of {', '.join(map(shown, conflicts))} to undo turn {number}?"
    return ctx.approver(ApprovalRequest("undo", title, "")) is not Decision.NO


def list_checkpoints(ctx: CommandContext, arg: str) -> None:
    """/checkpoints: the turns that changed files, with their files."""
    turns = _history(ctx).turns()
    if not turns:
        ctx.say("no turn has changed files in this session yet", "dim")
    for line in turn_lines(turns):
        ctx.say(line)
