"""Checkpoints and undo (SPEC §11): see `manager` (taking them) and `history` (diff, undo)."""

from nanohermes.checkpoints.history import FileDiff, History, UndoPlan, render_diff
from nanohermes.checkpoints.journal import CheckpointError, FileChange, FileState, Journal, TurnRecord
from nanohermes.checkpoints.locate import for_session, latest_in
from nanohermes.checkpoints.manager import FILE_LIMIT, Checkpoints, checkpoints_root, session_key

__all__ = [
    "FILE_LIMIT",
    "CheckpointError",
    "Checkpoints",
    "FileChange",
    "FileDiff",
    "FileState",
    "History",
    "Journal",
    "TurnRecord",
    "UndoPlan",
    "checkpoints_root",
    "for_session",
    "latest_in",
    "render_diff",
    "session_key",
]
