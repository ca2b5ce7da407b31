"""Checkpoints and undo (SPEC §11): see `manager` (taking them) and `history` (finding them, diff, undo)."""

from nanohermes.checkpoints.history import FileDiff, History, NoCheckpoints, for_session, latest_in
from nanohermes.checkpoints.journal import CheckpointError, TurnRecord
from nanohermes.checkpoints.manager import Checkpoints

__all__ = [
    "CheckpointError",
    "Checkpoints",
    "FileDiff",
    "History",
    "NoCheckpoints",
    "TurnRecord",
    "for_session",
    "latest_in",
]
