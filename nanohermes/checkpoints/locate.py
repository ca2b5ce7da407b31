"""Finding a session's checkpoints from outside the REPL (`nanohermes undo`)."""

from __future__ import annotations

from pathlib import Path

from nanohermes.checkpoints.journal import CheckpointError, Journal
from nanohermes.checkpoints.manager import Checkpoints, checkpoints_root, session_key, workspace_key


def for_session(state_dir: Path, session: Path) -> Checkpoints:
    """The checkpoints of `session` (whichever workspace it ran in). Raises CheckpointError."""
    session = session.expanduser().absolute()
    found = sorted(checkpoints_root(state_dir).glob(f"*/journals/{session_key(session)}.json"))
    if not found:
        raise CheckpointError(
            f"no checkpoints for session {session}", "nanohermes undo --list shows this workspace's"
        )
    return _open(state_dir, found[0])


def latest_in(state_dir: Path, workspace: Path) -> Checkpoints:
    """The checkpoints of the session most recently recorded in `workspace`. Raises CheckpointError."""
    folder = checkpoints_root(state_dir) / workspace_key(workspace.resolve()) / "journals"
    journals = [path for path in folder.glob("*.json") if path.is_file()] if folder.is_dir() else []
    if not journals:
        raise CheckpointError(
            f"no checkpoints in this workspace ({workspace})",
            "they are recorded when an agent turn changes files; --session picks another session",
        )
    return _open(state_dir, max(journals, key=lambda path: path.stat().st_mtime))


def _open(state_dir: Path, journal_path: Path) -> Checkpoints:
    journal = Journal.load(journal_path)
    workspace = Path(journal.workspace)
    if not workspace.is_dir():
        raise CheckpointError(f"the session's workspace {workspace} no longer exists")
    return Checkpoints(workspace, state_dir, Path(journal.session))
