"""`nanohermes undo` (plain text), and /diff, /undo and /checkpoints in the REPL (SPEC §11)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from nanohermes.core.errors import EXIT_FAILURE, EXIT_OK, NanoHermesError
from nanohermes.core.protocols import ApprovalRequest, Decision
from nanohermes.core.types import plural
from nanohermes.ui.safe_text import fail, terminal_safe

if TYPE_CHECKING:
    from nanohermes.checkpoints import Checkpoints, FileDiff, History, TurnRecord
    from nanohermes.config.options import UndoArgs
    from nanohermes.config.settings import Settings
    from nanohermes.ui.command_context import CommandContext

LINE_STYLES = {"+": "green", "-": "red", "@": "cyan"}
STATUS_STYLES = {"added": "green", "deleted": "red", "modified": "yellow"}


def run_undo_command(args: UndoArgs, settings: Settings) -> int:
    from nanohermes.checkpoints import History

    try:
        checkpoints = _locate(args, settings)
        if checkpoints is None:  # --list, and nothing recorded: an empty list, not an error
            where = "this workspace" if args.session is None else f"session {args.session}"
            _say(f"no turn of {where} changed files")
            return EXIT_OK
        history = History(checkpoints)
        if args.list_only:
            turns = history.turns()
            where = f"session {checkpoints.session} · workspace {checkpoints.workspace}"
            _say(where if turns else f"no turn of session {checkpoints.session.stem} changed files")
            for line in turn_lines(turns):
                _say(line)
            return EXIT_OK
        plan = history.plan(args.to)
        if plan.conflicts and not args.force:
            for diff in history.conflict_diffs(plan):
                _say(f"changed since the turn: {diff.path}", sys.stderr)
                for line in diff.lines[:40]:
                    _say(f"  {line}", sys.stderr)
        lines = history.undo(plan, force=args.force)
    except NanoHermesError as err:
        return fail(err.one_line(), EXIT_FAILURE)
    numbers = ", ".join(str(turn.number) for turn in reversed(plan.turns))
    _say(f"undid turn {numbers} of {checkpoints.session.stem}:")
    for line in lines:
        _say(f"  {line}")
    print("the model is told at the next message of that session")
    return EXIT_OK


def _locate(args: UndoArgs, settings: Settings) -> Checkpoints | None:
    """The session's checkpoints; None for --list when no turn of it recorded any."""
    from nanohermes.checkpoints import NoCheckpoints, for_session, latest_in
    from nanohermes.sessions.paths import resolve_session_path

    try:
        if args.session is None:
            return latest_in(settings.state_dir, Path.cwd())
        session = resolve_session_path(settings.sessions_dir, args.session)
        return for_session(settings.state_dir, session, Path.cwd())
    except NoCheckpoints:
        if args.list_only:
            return None
        raise


def turn_lines(turns: list[TurnRecord]) -> list[str]:
    """Each turn that changed files, then its files (for `undo --list` and /checkpoints; not yet
    terminal-safe: a shell command may create any file name)."""
    lines: list[str] = []
    for turn in turns:
        state = " (undone)" if turn.undone else ""
        lines.append(
            f"turn {turn.number}  {turn.when}  {plural(len(turn.files), 'file')}{state}  {turn.prompt}"
        )
        lines.extend(f"    {change.status:<8} {change.shown}" for change in turn.files)
    return lines


def _say(line: str, stream: TextIO | None = None) -> None:
    """Print a line whose file names, prompts and diffs may hold terminal escape sequences."""
    print(terminal_safe(line), file=stream)


def _history(ctx: CommandContext) -> History:
    checkpoints: Checkpoints | None = ctx.runtime.checkpoints
    if checkpoints is None:
        raise NanoHermesError("checkpoints are off (checkpoints = false): there is nothing to show or undo")
    from nanohermes.checkpoints import History

    return History(checkpoints)


def show_diff(ctx: CommandContext, arg: str) -> None:
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
    from rich.text import Text  # here: `nanohermes undo` prints plain text and never loads rich

    for diff in diffs:
        path = terminal_safe(diff.path)
        header = Text.assemble((f"{diff.status:<9}", STATUS_STYLES.get(diff.status, "")), (path, "bold"))
        ctx.console.print(header, overflow="fold")
        for line in diff.lines:
            ctx.say(line, LINE_STYLES.get(line[:1], ""))


def undo(ctx: CommandContext, arg: str) -> None:
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
        from nanohermes.checkpoints.journal import shown

        title = (
            f"Overwrite your later edits of {', '.join(map(shown, plan.conflicts))} to undo turn {number}?"
        )
        if ctx.approver(ApprovalRequest("undo", title, "")) is Decision.NO:
            ctx.say("nothing was undone", "dim")
            return
    lines = history.undo(plan, force=True)
    ctx.say(f"undid turn {number} ({plan.turns[0].prompt}):")
    for line in lines:
        ctx.say(f"  {line}", "dim")
    ctx.say("the model will be told with your next message", "dim")


def list_checkpoints(ctx: CommandContext, arg: str) -> None:
    turns = _history(ctx).turns()
    if not turns:
        ctx.say("no turn has changed files in this session yet", "dim")
    for line in turn_lines(turns):
        ctx.say(line)
