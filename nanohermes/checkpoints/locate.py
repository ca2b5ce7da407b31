"""Finding a session's checkpoints from outside the REPL (`nanohermes undo`)."""

from __future__ import annotations

import stat
from collections.abc import Iterable
from pathlib import Path

from nanohermes.checkpoints.journal import CheckpointError, Journal
from nanohermes.checkpoints.manager import Checkpoints, checkpoints_root, path_key


class NoCheckpoints(CheckpointError):
    """No turn of the session (or of the workspace) recorded any checkpoint."""


def for_session(state_dir: Path, session: Path, here: Path | None = None) -> Checkpoints:
    """The checkpoints of `session` in the workspace `here` when it changed files there, else in the
    workspace where it last did (a session resumed elsewhere has one journal per workspace). Raises
    CheckpointError."""
    session = session.expanduser().absolute()
    name = f"{path_key(session)}.json"
    local = checkpoints_root(state_dir) / path_key(here.resolve()) / "journals" / name if here else None
    found = local if local is not None and local.is_file() else None
    found = found or _newest(checkpoints_root(state_dir).glob(f"*/journals/{name}"))
    if found is None:
        raise NoCheckpoints(
            f"no checkpoints for session {session}", "nanohermes undo --list shows this workspace's"
        )
    return _open(state_dir, found)


def latest_in(state_dir: Path, workspace: Path) -> Checkpoints:
    """The checkpoints of the session most recently recorded in `workspace`. Raises CheckpointError."""
    found = _newest((checkpoints_root(state_dir) / path_key(workspace.resolve()) / "journals").glob("*.json"))
    if found is None:
        raise NoCheckpoints(
            f"no checkpoints in this workspace ({workspace})",
            "they are recorded when an agent turn changes files; --session picks another session",
        )
    return _open(state_dir, found)


def _newest(paths: Iterable[Path]) -> Path | None:
    """The most recently written of the journal files `paths` (one pruned meanwhile is passed over)."""
    dated: list[tuple[int, Path]] = []
    for path in paths:
        try:
            info = path.stat()
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            dated.append((info.st_mtime_ns, path))
    return max(dated)[1] if dated else None


def _open(state_dir: Path, journal_path: Path) -> Checkpoints:
    journal = Journal.load(journal_path)
    workspace = Path(journal.workspace)
    if not workspace.is_dir():
        raise CheckpointError(f"the session's workspace {workspace} no longer exists")
    return Checkpoints(workspace, state_dir, Path(journal.session))
