"""What a session's checkpoints record: per turn, each file's state before and after (JSON on disk).

    {"version": 1, "session": "/path/to/session.json", "workspace": "/path/to/workspace",
     "turns": [{"number": 3, "when": "...", "prompt": "...", "store": "git" | "copies",
                "before": "<commit>", "after": "<commit>", "undone": false, "told": true,
                "files": [{"path": "src/a.py", "before": [mode, ref] | null, "after": [mode, ref] | null,
                           "store": "copies" (only where it differs from the turn's)}]}]}

A file state is its mode (git style: 0o100644, 0o100755, 0o120000 for a symlink; the copy store keeps
the exact permission bits) and a reference to its bytes (a git blob id, or the sha256 of a kept copy);
null means the file did not exist. Written atomically, mode 0600.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nanohermes.core.errors import NanoHermesError
from nanohermes.core.fileio import StagedWrite, ensure_private_dir

JOURNAL_VERSION = 1


class CheckpointError(NanoHermesError):
    """A checkpoint could not be taken, read or restored."""


class CorruptJournal(CheckpointError):
    """A journal file whose content is not a journal (truncated, overwritten): unlike one that cannot
    be read (permissions), it will never be readable again."""


@dataclass(frozen=True)
class FileState:
    mode: int
    ref: str

    @property
    def is_link(self) -> bool:
        return self.mode & 0o170000 == 0o120000


@dataclass(frozen=True)
class FileChange:
    path: str
    """Relative to the workspace, with '/' separators."""
    before: FileState | None
    after: FileState | None
    store: str = ""
    """Where its states are kept when not where the turn's are: "copies" for a file git ignores
    that a git turn wrote or edited; "" for the turn's store."""

    @property
    def shown(self) -> str:
        """The path for display: bytes that are not UTF-8 shown as U+FFFD."""
        return shown(self.path)

    @property
    def status(self) -> str:
        return status(self.before, self.after)


def status(before: FileState | None, after: FileState | None) -> str:
    return "added" if before is None else "deleted" if after is None else "modified"


@dataclass
class TurnRecord:
    number: int
    when: str
    prompt: str
    store: str
    files: list[FileChange]
    before: str = ""
    after: str = ""
    undone: bool = False
    told: bool = True
    """False after an undo until the model has been told about it."""

    def to_dict(self) -> dict[str, Any]:
        kept = ("number", "when", "prompt", "store", "before", "after", "undone", "told")
        files = [
            {"path": f.path, "before": _state_out(f.before), "after": _state_out(f.after)}
            | ({"store": f.store} if f.store else {})
            for f in self.files
        ]
        return {name: getattr(self, name) for name in kept} | {"files": files}

    def store_of(self, change: FileChange) -> str:
        """Where the states of `change` are kept: "git" or "copies"."""
        return change.store or self.store

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TurnRecord:
        files = [
            FileChange(
                str(f["path"]), _state_in(f.get("before")), _state_in(f.get("after")), str(f.get("store", ""))
            )
            for f in raw.get("files", [])
        ]
        return cls(
            number=int(raw["number"]),
            when=str(raw.get("when", "")),
            prompt=str(raw.get("prompt", "")),
            store=str(raw.get("store", "git")),
            files=files,
            before=str(raw.get("before", "")),
            after=str(raw.get("after", "")),
            undone=bool(raw.get("undone", False)),
            told=bool(raw.get("told", True)),
        )


@dataclass
class Journal:
    path: Path
    session: str
    workspace: str
    turns: list[TurnRecord] = field(default_factory=list)

    @property
    def live(self) -> list[TurnRecord]:
        """Turns not undone, oldest first."""
        return [turn for turn in self.turns if not turn.undone]

    def copied_refs(self) -> set[str]:
        """The kept copies (by sha256) this journal's turns need."""
        return {
            state.ref
            for turn in self.turns
            for change in turn.files
            if turn.store_of(change) == "copies"
            for state in (change.before, change.after)
            if state is not None
        }

    def next_number(self) -> int:
        return max((turn.number for turn in self.turns), default=0) + 1

    @classmethod
    def load(cls, path: Path, session: str = "", workspace: str = "") -> Journal:
        """The journal at `path`, or an empty one when there is none. Raises CheckpointError."""
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls(path, session, workspace)
        except OSError as err:
            raise CheckpointError(f"checkpoint journal {path} is unreadable ({err})") from None
        except ValueError as err:
            raise CorruptJournal(f"checkpoint journal {path} is unreadable ({err})") from None
        try:
            turns = [TurnRecord.from_dict(turn) for turn in raw.get("turns", [])]
            return cls(path, str(raw["session"]), str(raw["workspace"]), turns)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise CorruptJournal(f"checkpoint journal {path} is malformed ({err!r})") from None

    def save(self) -> None:
        """Write the journal atomically. Raises CheckpointError."""
        staged = self.stage()
        try:
            staged.commit()
        except OSError as err:
            raise self._unwritable(err) from None

    def stage(self) -> StagedWrite:
        """The journal as it is now, written beside its file but not yet in place (see StagedWrite).
        Raises CheckpointError (a full disk: nothing written)."""
        data = {
            "version": JOURNAL_VERSION,
            "session": self.session,
            "workspace": self.workspace,
            "turns": [turn.to_dict() for turn in self.turns],
        }
        try:
            ensure_private_dir(self.path.parent)
            # ASCII escapes: a file name that is not valid UTF-8 (a lone surrogate here) survives
            return StagedWrite(self.path, json.dumps(data).encode("ascii"))
        except OSError as err:
            raise self._unwritable(err) from None

    def _unwritable(self, err: OSError) -> CheckpointError:
        return CheckpointError(f"cannot write checkpoint journal {self.path}: {err.strerror or err}")


def _state_out(state: FileState | None) -> list[Any] | None:
    return None if state is None else [state.mode, state.ref]


def _state_in(raw: Any) -> FileState | None:
    if raw is None:
        return None
    mode, ref = raw
    return FileState(int(mode), str(ref))


def shown(path: str) -> str:
    """A path as it can be printed (a file name that is not UTF-8 holds lone surrogates)."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
