"""Team memory (issue 34): `<git top level>/.nanohermes/memory.json`, committed with the code. The
repository may be hostile, so each entry read passes the checks of a write; a file too large, with
conflict markers or reached through a symlink is refused and never written."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from nanohermes.core.errors import MemoryRejected, StoreError
from nanohermes.core.types import plural
from nanohermes.memory.constants import MAX_TEXT
from nanohermes.memory.entry import Entry
from nanohermes.memory.memfile import FormatError, MemoryFile, parse
from nanohermes.memory.project import git_dir, git_top_level, project_key
from nanohermes.memory.security import refusal_reason, risky_instruction
from nanohermes.memory.state import State
from nanohermes.memory.store import MemoryStore
from nanohermes.memory.writing import GLOBAL, NewMemory

TEAM_DIR = ".nanohermes"
MAX_BYTES = 1 << 20
MAX_ENTRIES = 2000
_CONFLICT = re.compile(rb"^<{7}", re.MULTILINE)
_KEY_LIKE = re.compile(r"[A-Za-z0-9+=_-]{20,}")


def workspace_store(directory: Path | str, workspace: Path, **options: Any) -> MemoryStore:
    """The store in `directory` for `workspace` (SPEC §3.9), with its repository's team memory."""
    top = git_top_level(Path(os.path.abspath(workspace)))
    if top is not None and os.path.realpath(top / TEAM_DIR) == os.path.realpath(Path(directory).expanduser()):
        top = None  # a home directory in git: its .nanohermes is the user's own memory
    notice, secrets = options.get("on_notice"), options.get("secrets", ())
    team = None if top is None else TeamStore(top, on_notice=notice, secrets=secrets)
    return MemoryStore(directory, project=project_key(workspace), team=team, **options)


class TeamStore(MemoryStore):
    """The team memory of the repository at `top`; its lock lives in the git directory."""

    def __init__(
        self, top: Path, *, on_notice: Callable[[str], None] | None = None, secrets: Iterable[str] = ()
    ) -> None:
        super().__init__(top / TEAM_DIR, max_entries=MAX_ENTRIES, on_notice=on_notice, secrets=secrets)
        lock = (git_dir(top) or self.dir) / "nanohermes-team-memory.lock"
        self._file = MemoryFile(self.dir, lock, shared=True)
        self._refusal = ""

    def _current(self) -> State:
        """The file's entries; none when it is refused (said once per reason)."""
        try:
            if any(os.path.islink(path) for path in (self.dir, self.path)):
                raise FormatError("it is reached through a symlink")
            return super()._current()
        except (OSError, StoreError, FormatError) as err:
            reason = err.one_line() if isinstance(err, StoreError) else str(err)
        state = self._fresh()
        state.problem = f"team memory {self.path} refused: {reason}"
        if reason != self._refusal:
            self._on_notice(state.problem)
        self._refusal = reason
        return state

    def _quarantine(self, reason: str) -> State:
        raise FormatError(reason)  # never moved aside: it is the repository's file

    def _read(self) -> State:
        found = self._file.read(MAX_BYTES)
        if found is None:
            return self._fresh()
        if _CONFLICT.search(found[1]):
            raise FormatError("it holds merge conflict markers (<<<<<<<); resolve the conflict in git")
        parsed = parse(found[1])
        if len(parsed.items) > MAX_ENTRIES:
            raise FormatError(f"it holds {len(parsed.items):,} entries, over the limit of {MAX_ENTRIES:,}")
        state = self._fresh(parsed, found[0])
        if state.skipped:
            skipped = plural(len(state.skipped), "entry")
            self._on_notice(f"team memory {self.path}: {skipped} skipped ({state.skipped[0]})")
        self._refusal = ""
        return state

    def _adopt(self, entry: Entry) -> Entry | str:
        """An entry read, checked as a write checks it."""
        shown = " ".join((entry.text, *entry.keys))
        reason = refusal_reason(shown) or risky_instruction(shown)
        if len(entry.text) > MAX_TEXT:
            reason = f"its text is over {MAX_TEXT} characters"
        return reason or dataclasses.replace(entry, context="", project=None, team=True)

    def _checked(self, memory: NewMemory, source: str) -> Entry | MemoryRejected:
        """As for memory.json, without context or project; refused when risky or still secret-like."""
        entry = super()._checked(dataclasses.replace(memory, context="", scope=GLOBAL), source)
        if isinstance(entry, MemoryRejected):
            return entry
        shown = " ".join((entry.text, *entry.keys))
        reason = risky_instruction(shown)
        if reason is None and any(  # a key of unknown shape: a long mix of cases and 2+ digits
            re.search("[A-Z]", run) and re.search("[a-z]", run) and len(re.findall("[0-9]", run)) >= 2
            for run in _KEY_LIKE.findall(shown)
        ):
            reason = "it still looks like a secret once redacted (a long mix of letters and digits)"
        return (
            MemoryRejected(f"not for the team memory: {reason}")
            if reason
            else dataclasses.replace(entry, team=True)
        )
