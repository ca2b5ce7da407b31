"""Which sessions have a turn changing the workspace right now (two nanohermes in one workspace).

A turn's "after" snapshot also holds what another session's turn changed meanwhile (an undo would revert
that work), so a turn that overlapped another records only the files its own tools wrote or edited.
`active/<session-key>.lock` is held (an OS lock, gone with the process) from a turn's first snapshot
to its end; a session that finds another's held creates that one's `<session-key>.shared` to tell it."""

from __future__ import annotations

from pathlib import Path

from filelock import BaseFileLock, FileLock, Timeout

from nanohermes.checkpoints.journal import CheckpointError


class ActiveTurns:
    def __init__(self, directory: Path, key: str) -> None:
        self.directory = directory
        self.key = key
        self._held: BaseFileLock | None = None

    def join(self) -> bool:
        """Mark this session's turn as running; True when another session's turn is running too."""
        try:
            self.directory.mkdir(exist_ok=True, mode=0o700)
            self._flag(self.key).unlink(missing_ok=True)  # set during an earlier turn
            others = self.others_running()
            for key in others:
                self._flag(key).touch()
            held = FileLock(str(self.directory / f"{self.key}.lock"), timeout=0)
            held.acquire()
        except (OSError, Timeout) as err:
            raise CheckpointError(f"cannot mark the turn as running in {self.directory}: {err}") from None
        self._held = held
        return bool(others)

    def others_running(self) -> list[str]:
        """The keys of the other sessions whose turn is running now."""
        others: list[str] = []
        for path in self.directory.glob("*.lock"):
            if path.stem == self.key:
                continue
            try:
                with FileLock(str(path), timeout=0):  # free: that session's turn has ended
                    pass
            except Timeout:  # held: that session's turn is running
                others.append(path.stem)
        return others

    def shared(self) -> bool:
        """Whether another session's turn ran while this one did (`release` ends it)."""
        return self._flag(self.key).exists()

    def release(self) -> None:
        """Stop marking this session's turn as running (its flag is cleared at the next join)."""
        if self._held is not None:
            self._held.release()
            self._held = None

    def forget(self, key: str) -> None:
        for path in (self.directory / f"{key}.lock", self._flag(key)):
            path.unlink(missing_ok=True)

    def _flag(self, key: str) -> Path:
        return self.directory / f"{key}.shared"
