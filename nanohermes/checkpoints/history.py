"""Reading and reverting recorded turns (/diff, undo), and finding a session's checkpoints. Undo puts
back every file the turns touched as it was before the earliest of them; a file edited since the last
is a conflict, and nothing is touched unless forced."""

from __future__ import annotations

import contextlib
import difflib
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from nanohermes.checkpoints.files import put_back, read_copy, remove, same_as
from nanohermes.checkpoints.journal import CheckpointError, FileState, Journal, TurnRecord, shown, status
from nanohermes.checkpoints.manager import Checkpoints, checkpoints_root, path_key
from nanohermes.core.fileio import StagedWrite

MAX_DIFF_LINES = 4000
State = tuple[FileState | None, str]  # a file's state and the store that holds it


@dataclass(frozen=True)
class FileDiff:
    path: str
    status: str  # added, deleted, modified
    lines: list[str]  # a unified diff without its ---/+++ header, or one line saying it is binary


@dataclass
class UndoPlan:
    turns: list[TurnRecord]  # latest first
    final: dict[str, State]  # per path: the state to restore
    expected: dict[str, State]  # per path: what the last turn left
    conflicts: list[str]


class History:
    def __init__(self, checkpoints: Checkpoints) -> None:
        self.cp = checkpoints

    def turns(self) -> list[TurnRecord]:
        return self.cp.journal().turns

    def diff(self, all_turns: bool = False) -> tuple[list[TurnRecord], list[FileDiff]]:
        """The last live turn's changes, or (all_turns) every live turn's, first state to last."""
        live = self.cp.journal().live
        chosen = live if all_turns else live[-1:]
        first, last = _span(chosen)
        read = self._reader([*first.values(), *last.values()])
        spans = [(path, first[path][0], last[path][0]) for path in sorted(first)]
        return chosen, [
            file_diff(path, status(old, new), read(old), read(new)) for path, old, new in spans if old != new
        ]

    def _reader(self, states: list[State]) -> Callable[[FileState | None], bytes]:
        """The bytes of each of `states` (all read at once), b"" for an absent file."""
        git_ids = [state.ref for state, store in states if state is not None and store == "git"]
        contents = self.cp.repo().read_blobs(git_ids) if git_ids else {}
        for state, store in states:
            if state is not None and store == "copies":
                contents[state.ref] = read_copy(self.cp.copies, state.ref)
        return lambda state: b"" if state is None else contents[state.ref]

    def plan(self, to: int | None = None) -> UndoPlan:
        """What undoing the last live turn (or every live turn from number `to` on) would do."""
        live = self.cp.journal().live
        if not live:
            raise CheckpointError("nothing to undo: no recorded turn changed files in this session")
        if to is not None and not any(turn.number == to for turn in live):
            numbers = ", ".join(str(turn.number) for turn in live)
            raise CheckpointError(f"no turn {to} to undo (turns that can be undone: {numbers})")
        targets = live[-1:] if to is None else [turn for turn in live if turn.number >= to]
        final, expected = _span(targets)
        for path in final:
            _check_path(path)
        root = self.cp.workspace
        conflicts = [
            path for path, (state, store) in expected.items() if not same_as(root / path, root, state, store)
        ]
        return UndoPlan(list(reversed(targets)), final, expected, conflicts)

    def conflict_diffs(self, plan: UndoPlan) -> list[FileDiff]:
        """For each conflict: how the file differs now from what the turn left."""
        read = self._reader([plan.expected[path] for path in plan.conflicts])
        diffs = []
        for path in plan.conflicts:
            target = self.cp.workspace / path
            now = b""
            with contextlib.suppress(OSError):
                now = target.read_bytes() if target.is_file() else b""  # (not a FIFO: that would hang)
            status = "modified" if os.path.lexists(target) else "deleted"
            diffs.append(file_diff(path, status, read(plan.expected[path][0]), now))
        return diffs

    def undo(self, plan: UndoPlan, *, force: bool = False) -> list[str]:
        """Restore the plan's files; one line per file. Raises CheckpointError."""
        if plan.conflicts and not force:
            names = ", ".join(shown(path) for path in plan.conflicts[:10])
            raise CheckpointError(
                f"changed since the turn: {names}; nothing was restored", "pass --force to overwrite them"
            )
        with self.cp.lock():
            read = self._reader(list(plan.final.values()))
            staged = self._stage_undone(plan)  # before any file changes: a full disk restores nothing
            lines: list[str] = []
            try:
                self._restore(plan, read, lines)
                staged.commit()
            except CheckpointError as err:
                if not lines:
                    raise
                done = "; ".join(lines[:10]) + (f"; and {len(lines) - 10} more" if len(lines) > 10 else "")
                raise CheckpointError(
                    f"{err}; undo stopped after it had {done}",
                    "fix the cause and undo again to finish (the files already done count as edited since)",
                ) from None
            except OSError as err:  # the rename of the journal: the files are back, the record is not
                raise CheckpointError(
                    f"{'; '.join(lines)}, but cannot record the undo in {self.cp.journal_path}: "
                    f"{err.strerror or err}",
                    "undo again with --force to record it",
                ) from None
            finally:
                staged.discard()
        return lines

    def _restore(self, plan: UndoPlan, read: Callable[[FileState | None], bytes], lines: list[str]) -> None:
        """Put the plan's files back, appending one line per file done (removals first, deepest first)."""
        root = self.cp.workspace
        removals = sorted((p for p, (s, _) in plan.final.items() if s is None), key=_depth, reverse=True)
        for path in removals:
            remove(root / path, root)
            lines.append(f"removed {shown(path)}")
        for path in sorted((p for p in plan.final if p not in removals), key=_depth):
            state, store = plan.final[path]
            assert state is not None
            existed = (root / path).exists() or (root / path).is_symlink()
            put_back(root / path, root, state, read(state), exact_mode=store == "copies")
            lines.append(f"{'restored' if existed else 'recreated'} {shown(path)}")

    def _stage_undone(self, plan: UndoPlan) -> StagedWrite:
        journal = self.cp.journal()
        numbers = {turn.number for turn in plan.turns}
        for turn in journal.turns:
            if turn.number in numbers:
                turn.undone, turn.told = True, False
        try:
            return journal.stage()
        except CheckpointError as err:
            raise CheckpointError(f"{err}; nothing was restored") from None


def _span(turns: list[TurnRecord]) -> tuple[dict[str, State], dict[str, State]]:
    """Per path the turns (oldest first) touched: its state before the first and after the last."""
    before: dict[str, State] = {}
    after: dict[str, State] = {}
    for turn in turns:
        for change in turn.files:
            before.setdefault(change.path, (change.before, turn.store_of(change)))
            after[change.path] = (change.after, turn.store_of(change))
    return before, after


def file_diff(path: str, status: str, old: bytes, new: bytes) -> FileDiff:
    name = shown(path)
    before, after = _text_lines(old), _text_lines(new)
    if before is None or after is None:
        return FileDiff(name, status, [f"binary file: {len(old):,} → {len(new):,} bytes"])
    lines = list(difflib.unified_diff(before, after, f"a/{name}", f"b/{name}", lineterm="", n=3))[2:]
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"… {len(lines) - MAX_DIFF_LINES} more lines"]
    return FileDiff(name, status, lines)


def _text_lines(data: bytes) -> list[str] | None:
    """The lines of UTF-8 text; None for binary data (not UTF-8, or a NUL early on)."""
    try:
        return None if b"\0" in data[:8192] else data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return None


def _depth(path: str) -> int:
    return path.count("/")


def _check_path(path: str) -> None:
    parts = path.split("/")
    if path.startswith("/") or ".." in parts or "" in parts or ".git" in parts:
        raise CheckpointError(f"checkpoint journal holds a bad path {path!r}; not restoring anything")


class NoCheckpoints(CheckpointError):
    """No turn of the session (or the workspace) recorded any checkpoint."""


def for_session(state_dir: Path, session: Path, here: Path) -> Checkpoints:
    """The checkpoints of `session` in `here` when it changed files there, else where it last did (a
    session resumed elsewhere has one journal per workspace). Raises CheckpointError."""
    mine = Checkpoints(here, state_dir, session)
    if mine.journal_path.is_file():
        return mine
    found = _newest(checkpoints_root(state_dir).glob(f"*/journals/{mine.journal_path.name}"))
    if found is None:
        raise NoCheckpoints(
            f"no checkpoints for session {mine.session}", "nanohermes undo --list shows this workspace's"
        )
    return _open(state_dir, found)


def latest_in(state_dir: Path, workspace: Path) -> Checkpoints:
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
        with contextlib.suppress(OSError):
            info = path.stat()
            if stat.S_ISREG(info.st_mode):
                dated.append((info.st_mtime_ns, path))
    return max(dated)[1] if dated else None


def _open(state_dir: Path, journal_path: Path) -> Checkpoints:
    journal = Journal.load(journal_path)
    workspace = Path(journal.workspace)
    if not workspace.is_dir():
        raise CheckpointError(f"the session's workspace {workspace} no longer exists")
    return Checkpoints(workspace, state_dir, Path(journal.session))
