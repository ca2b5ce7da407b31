"""Checkpoints of one session in one workspace (SPEC §11): the first change of a turn snapshots the
workspace, its end snapshots again and records what changed. A failure never stops a turn: it becomes
a note, and that turn cannot be undone."""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

from nanohermes.checkpoints.active import ActiveTurns
from nanohermes.checkpoints.files import prune_copies, state_of
from nanohermes.checkpoints.journal import (
    CheckpointError,
    CorruptJournal,
    FileChange,
    FileState,
    Journal,
    TurnRecord,
)
from nanohermes.checkpoints.shadow import GitTimeout, ShadowRepo
from nanohermes.core.fileio import resolved
from nanohermes.core.protocols import TurnChanges

FILE_LIMIT = 20_000
"""Above this many files a workspace is not snapshotted with git: per-file copies instead."""
LOCK_TIMEOUT = 60.0
PROMPT_CHARS = 120
PRUNE_GRACE = 3600.0
"""Seconds a journal is kept after its last write even when its session file does not exist: a
running session writes its file only after the turn (`-p`: after distillation)."""
WARM_UP_WAIT = 30.0
"""Seconds `settle` waits for a background warm-up before the process leaves anyway."""


def path_key(path: Path) -> str:
    return hashlib.sha256(str(path).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def checkpoints_root(state_dir: Path) -> Path:
    return state_dir / "checkpoints"


@dataclass
class _Turn:
    prompt: str
    tree: str = ""
    copies: dict[str, FileState | None] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)  # paths a write or edit of this turn was checked for
    shell: bool = False  # a shell command ran: it may have changed any file
    shared: bool = False  # another session's turn was running here at this one's first snapshot


class Checkpoints:
    """The agent's turn recorder and the tool runner's `protocols.ChangeGuard`, for one session."""

    def __init__(
        self,
        workspace: Path,
        state_dir: Path,
        session: Path,
        *,
        git: str | None = "",
        private: tuple[Path, ...] = (),
    ) -> None:
        """`git`: the git executable ("" finds it on PATH; None: do without git). `private`:
        nanohermes' own directories (memory, sessions), never snapshotted nor restored; the
        checkpoints' own directory is always one."""
        self.workspace = workspace.resolve()
        self.session = session.expanduser().absolute()
        self.dir = checkpoints_root(state_dir) / path_key(self.workspace)
        self.journal_path = self.dir / "journals" / f"{path_key(self.session)}.json"
        self.copies = self.dir / "copies"  # kept copies of files by sha256, shared by all sessions
        self._git = git
        self._repo: ShadowRepo | None = None
        self.store = ""  # "git" or "copies" once the first change decided it
        self._lock = threading.RLock()  # the turn's state and notes (the warm-up takes it only briefly)
        self._work = threading.Lock()  # held across git work; taken before `_lock`
        self._warming: threading.Thread | None = None
        self._turn: _Turn | None = None
        self._notes: list[str] = []
        self._pruned = False
        self._file_lock = FileLock(str(self.dir / "lock"), timeout=LOCK_TIMEOUT)
        self._private = [resolved(path) for path in (*private, checkpoints_root(state_dir))]
        self._active = ActiveTurns(self.dir / "active", path_key(self.session))

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """The cross-process lock on this workspace's checkpoints. Raises CheckpointError."""
        path = self.dir / "lock"
        try:
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._file_lock.acquire()
        except Timeout:  # before OSError: filelock's Timeout is a TimeoutError
            raise CheckpointError(
                f"the checkpoints of this workspace are locked by another nanohermes ({path})",
                "wait for it to finish and try again",
            ) from None
        except OSError as err:
            raise CheckpointError(f"cannot lock checkpoints {path}: {err.strerror or err}") from None
        try:
            yield
        finally:
            self._file_lock.release()

    def repo(self) -> ShadowRepo:
        if self._repo is None:
            git = shutil.which("git") if self._git == "" else self._git
            if not git:
                raise CheckpointError("git is not installed")
            self._repo = ShadowRepo(git, self.dir / "git", self.workspace)
        return self._repo

    def journal(self) -> Journal:
        return Journal.load(self.journal_path, str(self.session), str(self.workspace))

    def start_warm_up(self) -> None:
        """`warm_up` overlaps the model's first request; the first change of a turn waits for it."""
        self._warming = threading.Thread(target=self.warm_up, name="nh-checkpoints", daemon=True)
        self._warming.start()

    def settle(self) -> None:
        """Wait (bounded) for a background warm-up still running: called before the process leaves,
        so that no git command outlives it and trips the next run on a lock of the shadow index."""
        if self._warming is not None:
            self._warming.join(WARM_UP_WAIT)

    def warm_up(self) -> None:
        """Decide git or copies, and build the shadow index of a new workspace, so the first change only
        re-reads what changed. Never raises (a failure shows at the first change)."""
        with self._work, contextlib.suppress(CheckpointError, OSError), self.lock():
            if self._decide() == "git" and not self.repo().index.exists():
                self._snapshot()

    def begin_turn(self, prompt: str) -> None:
        with self._lock:
            self._turn = _Turn(" ".join(prompt.split())[:PROMPT_CHARS])

    def before_change(self, path: Path | None) -> None:
        """Before every changing tool call (path: None for a shell command). Waits for a warm-up, so
        the "before" snapshot is complete. Never raises."""
        with self._work, self._lock:
            turn = self._turn
            if turn is None:  # no turn, or its checkpoint failed
                return
            try:
                with self.lock():
                    self._before(turn, path)
            except Exception as err:  # never stop the turn: say so, and leave this turn unrecorded
                self._turn = None
                self._notes.append(f"checkpoint failed ({_why(err)}): this turn's changes cannot be undone")

    def _before(self, turn: _Turn, path: Path | None) -> None:
        if self._decide() == "git" and not turn.tree:
            turn.shared = self._active.join()  # marked as running from its first snapshot on
            turn.tree = self._snapshot()
        turn.shell = turn.shell or path is None
        relative = self._relative(path)
        if path is None or relative is None or relative in turn.seen:
            return
        turn.seen.add(relative)
        if any(resolved(path).is_relative_to(p) for p in self._private):
            return
        if self.store == "copies" or self.repo().ignores(relative):  # .env, build output: git skips them
            turn.copies[relative] = state_of(path, "copies", self.copies)

    def _decide(self) -> str:
        if self.store:
            return self.store
        try:
            repo = self.repo()
            repo.ensure([path for path in map(self._relative, self._private) if path not in (None, ".")])
            if repo.count_files() > FILE_LIMIT:
                raise CheckpointError(f"the workspace holds more than {FILE_LIMIT:,} files")
            self.store = "git"
        except CheckpointError as err:
            self._fall_back(err.one_line())
        return self.store

    def _snapshot(self) -> str:
        """A snapshot of the workspace, or "" after falling back to copies because git took too long
        (huge files): every later turn's first change would wait as long again, then fail."""
        try:
            return self.repo().snapshot()
        except GitTimeout as err:
            self._fall_back(err.one_line())
            return ""

    def _fall_back(self, reason: str) -> None:
        self.store = "copies"
        with self._lock:  # the warm-up thread notes too
            self._notes.append(
                f"checkpoints: {reason}, so only files the agent writes or edits are kept (as copies); "
                "changes made by shell commands cannot be undone"
            )

    def _relative(self, path: Path | None) -> str | None:
        """`path` relative to the workspace; None when it is outside (not covered)."""
        try:
            return None if path is None else resolved(path).relative_to(self.workspace).as_posix()
        except ValueError:
            return None

    def end_turn(self) -> TurnChanges:
        """Record what the turn changed (nothing, at no cost, when nothing tried to change anything)."""
        with self._lock:
            turn, self._turn = self._turn, None
            notes, self._notes = self._notes, []
        record = None
        try:
            if turn is not None and (turn.tree or turn.copies):
                with self._work, self.lock():
                    record = self._record(turn, notes)
                    if record is not None and not self._pruned:
                        self._pruned = True
                        try:
                            self._prune()
                        except (CheckpointError, OSError) as err:  # the turn is recorded all the same
                            notes.append(f"old checkpoints were not pruned ({_why(err)})")
        except Exception as err:  # the turn is over either way: say so
            if isinstance(err, GitTimeout):  # the next turn would wait as long again
                self.store = "copies"
            notes.append(f"checkpoint failed ({_why(err)}): this turn cannot be undone")
            record = None
        finally:
            self._active.release()  # whatever failed: other sessions must not see it running
        if record is None:
            return TurnChanges(notes=tuple(notes))
        return TurnChanges(record.number, tuple(change.shown for change in record.files), tuple(notes))

    def _record(self, turn: _Turn, notes: list[str]) -> TurnRecord | None:
        """The turn's record, saved in the journal (None: it changed nothing); `notes`: what to say."""
        shared = bool(turn.tree) and (self._active.shared() or turn.shared)  # before the "after" snapshot
        journal = self._journal_to_record(notes)
        number = max((turn.number for turn in journal.turns), default=0) + 1
        when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if turn.tree:
            repo = self.repo()
            after = repo.snapshot()
            changes = repo.changes(turn.tree, after) if after != turn.tree else []
            if shared:
                changes = self._own(turn, changes, notes)
            tracked = {change.path for change in changes}
            changes += [c for c in self._copied(turn, "copies") if c.path not in tracked]  # ignored ones
            if not changes:
                return None
            first = repo.commit(turn.tree, f"before turn {number}")
            last = repo.commit(after, f"after turn {number}: {turn.prompt}", first)
            repo.run("update-ref", f"refs/nanohermes/{path_key(self.session)}/{number}", last)
            record = TurnRecord(number, when, turn.prompt, "git", changes, first, last)
        else:
            record = TurnRecord(number, when, turn.prompt, "copies", self._copied(turn, ""))
        if not record.files:
            return None
        journal.turns.append(record)
        journal.save()
        return record

    def _journal_to_record(self, notes: list[str]) -> Journal:
        """The journal, or a new one when it is corrupt (set aside: it would fail every later record)."""
        try:
            return self.journal()
        except CorruptJournal as err:
            aside = self.journal_path.with_name(f"{self.journal_path.name}.corrupt")
            try:
                self.journal_path.replace(aside)
            except OSError as move:
                raise CheckpointError(f"{err.one_line()}; cannot move it aside: {move.strerror}") from None
            notes.append(f"{err.one_line()}: moved to {aside.name}; earlier turns can no longer be undone")
            return self.journal()

    def _own(self, turn: _Turn, changes: list[FileChange], notes: list[str]) -> list[FileChange]:
        """Of the changes seen while another session's turn ran here, those of files this turn's own tools
        wrote or edited: the others may be that session's."""
        own = [change for change in changes if change.path in turn.seen]
        if len(own) < len(changes) and turn.shell:
            notes.append(
                "checkpoint: another nanohermes session was changing this workspace during this turn, so "
                "only the files this turn wrote or edited are recorded; changes made by its shell commands "
                "cannot be told apart from that session's and cannot be undone"
            )
        return own

    def _copied(self, turn: _Turn, store: str) -> list[FileChange]:
        """The changes of the files the turn kept copies of (`store`: how the journal names it)."""
        changes = [
            FileChange(relative, before, state_of(self.workspace / relative, "copies", self.copies), store)
            for relative, before in turn.copies.items()
        ]
        return [change for change in changes if change.before != change.after]

    def _prune(self) -> None:
        """Forget the checkpoints of sessions whose session file is gone (they live as long as it),
        unless written in the last PRUNE_GRACE seconds (a session still running, not saved yet)."""
        keep: set[str] = set()
        unreadable = dropped = False
        recent = time.time() - PRUNE_GRACE
        for path in sorted((self.dir / "journals").glob("*.json")):
            try:
                journal = Journal.load(path)
                fresh = path.stat().st_mtime > recent
            except (CheckpointError, OSError):
                unreadable = True  # which copies it needs is unknown: keep them all
                continue
            if path == self.journal_path or fresh or Path(journal.session).exists():
                keep.update(journal.copied_refs())
                continue
            if self._repo is not None:
                dropped = self._repo.drop_refs(f"refs/nanohermes/{path.stem}/") or dropped
            self._active.forget(path.stem)
            path.unlink(missing_ok=True)
        if not unreadable:
            prune_copies(self.copies, keep)
        if dropped and self._repo is not None and not self._active.others_running():
            # gc.auto is off, so without this a deleted session's snapshots would fill the disk for
            # good. Not while another session's turn runs: its "before" snapshot has no ref until the
            # turn ends, and a turn can outlast the grace; the grace covers one that starts meanwhile.
            with contextlib.suppress(CheckpointError):  # housekeeping: failing leaves the disk as it was
                self._repo.run("prune", f"--expire={int(PRUNE_GRACE)}.seconds.ago")

    def model_notes(self) -> list[str]:
        """Lines for the model about turns the user undid since it last heard (read without the lock
        first: a turn mostly has nothing to hear)."""
        try:
            if not any(turn.undone and not turn.told for turn in self.journal().turns):
                return []
            with self.lock():
                journal = self.journal()
                untold = [turn for turn in journal.turns if turn.undone and not turn.told]
                for turn in untold:
                    turn.told = True
                journal.save()
        except (CheckpointError, OSError):
            return []
        return [undo_note(turn) for turn in untold]


def undo_note(turn: TurnRecord) -> str:
    files = ", ".join(f"{change.shown} ({change.status})" for change in turn.files[:20])
    more = f" and {len(turn.files) - 20} more" if len(turn.files) > 20 else ""
    return (
        f'[nanohermes: the user reverted the file changes of an earlier turn ("{turn.prompt}"): '
        f"{files}{more} are back as they were before it. Do not redo those changes unless asked.]"
    )


def _why(err: Exception) -> str:
    if isinstance(err, CheckpointError):
        return err.one_line()
    if isinstance(err, OSError) and err.strerror:
        return f"{err.strerror}: {err.filename}" if err.filename else err.strerror
    return f"{type(err).__name__}: {err}"
