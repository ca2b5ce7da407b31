"""`nanohermes undo [--session S] [--list] [--to N] [--force]`: revert agent turns outside the REPL
(SPEC §11). Plain text: what was restored on stdout, errors on stderr."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from nanohermes.core.errors import EXIT_FAILURE, EXIT_OK, NanoHermesError
from nanohermes.core.types import plural
from nanohermes.ui.safe_text import say, terminal_safe

if TYPE_CHECKING:
    from nanohermes.checkpoints import Checkpoints, History, TurnRecord
    from nanohermes.config.options import UndoArgs
    from nanohermes.config.settings import Settings


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
            _list(history, checkpoints)
            return EXIT_OK
        plan = history.plan(args.to)
        if plan.conflicts and not args.force:
            for diff in history.conflict_diffs(plan):
                _say(f"changed since the turn: {diff.path}", sys.stderr)
                for line in diff.lines[:40]:
                    _say(f"  {line}", sys.stderr)
        lines = history.undo(plan, force=args.force)
    except NanoHermesError as err:
        say(f"error: {err.one_line()}")
        return EXIT_FAILURE
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


def _list(history: History, checkpoints: Checkpoints) -> None:
    turns = history.turns()
    if not turns:
        _say(f"no turn of session {checkpoints.session.stem} changed files")
        return
    _say(f"session {checkpoints.session} · workspace {checkpoints.workspace}")
    for line in turn_lines(turns):
        _say(line)


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
    print(terminal_safe(line), file=stream or sys.stdout)
