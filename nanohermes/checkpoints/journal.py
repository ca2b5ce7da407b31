"""What a session's checkpoints record: per turn, each file's state before and after (JSON, the
dataclasses below, written atomically, mode 0600). A state is `[mode, ref]`: git's mode (the copy store
keeps the exact permission bits) and a git blob id or the sha256 of a kept copy; null: no such file."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from pydantic import TypeAdapter, ValidationError

from nanohermes.core.errors import NanoHermesError
from nanohermes.core.fileio import StagedWrite, ensure_private_dir

JOURNAL_VERSION = 1


class CheckpointError(NanoHermesError):
    """A checkpoint could not be taken, read or restored."""


class CorruptJournal(CheckpointError):
    """Content that is not a journal (truncated, overwritten): unlike an unreadable file, never readable."""


class FileState(NamedTuple):  # saved as `[mode, ref]`
    mode: int
    ref: str

    @property
    def is_link(self) -> bool:
        return self.mode & 0o170000 == 0o120000


@dataclass(frozen=True)
class FileChange:
    path: str  # relative to the workspace, with '/' separators
    before: FileState | None
    after: FileState | None
    store: str = ""  # "copies" for a file git ignores that a git turn wrote or edited; "" for the turn's

    @property
    def shown(self) -> str:
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
    told: bool = True  # False after an undo until the model has been told about it

    def store_of(self, change: FileChange) -> str:
        return change.store or self.store


@dataclass
class Journal:
    session: str
    workspace: str
    turns: list[TurnRecord] = field(default_factory=list)
    path: Path = field(default=Path(), repr=False)  # where it is kept (not saved in it)

    @property
    def live(self) -> list[TurnRecord]:
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

    @classmethod
    def load(cls, path: Path, session: str = "", workspace: str = "") -> Journal:
        """The journal at `path`, or an empty one when there is none. Raises CheckpointError."""
        try:
            # json, not pydantic's parser: that refuses the lone surrogates of a name that is not UTF-8
            journal = _format().validate_python(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return cls(session, workspace, path=path)
        except OSError as err:
            raise CheckpointError(f"checkpoint journal {path} is unreadable ({err})") from None
        except ValidationError as err:  # before ValueError: it is one
            first = err.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            problem = f"{where}: {first['msg']}" if where else first["msg"]
            raise CorruptJournal(f"checkpoint journal {path} is malformed ({problem})") from None
        except ValueError as err:  # not JSON, not UTF-8
            raise CorruptJournal(f"checkpoint journal {path} is unreadable ({err})") from None
        journal.path = path
        return journal

    def save(self) -> None:
        try:
            self.stage().commit()  # (stage raises CheckpointError itself)
        except OSError as err:
            raise self._unwritable(err) from None

    def stage(self) -> StagedWrite:
        """The journal written beside its file, not yet in place. Raises CheckpointError."""
        data = {"version": JOURNAL_VERSION, **_format().dump_python(self, mode="json", exclude={"path"})}
        try:
            ensure_private_dir(self.path.parent)
            # ASCII escapes: a file name that is not valid UTF-8 (a lone surrogate here) survives
            return StagedWrite(self.path, json.dumps(data).encode("ascii"))
        except OSError as err:
            raise self._unwritable(err) from None

    def _unwritable(self, err: OSError) -> CheckpointError:
        return CheckpointError(f"cannot write checkpoint journal {self.path}: {err.strerror or err}")


@functools.cache
def _format() -> TypeAdapter[Journal]:
    """Built on first use (a few ms): a turn that changes nothing never reads or writes a journal."""
    return TypeAdapter(Journal)


def shown(path: str) -> str:
    """A path as it can be printed (a file name that is not UTF-8 holds lone surrogates)."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
