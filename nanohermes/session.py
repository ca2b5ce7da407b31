"""Session files (SPEC §4.4; format documented in sessions/README.md).

    {"version": 1, "id", "created", "updated", "model", "workspace",
     "messages": [wire-format messages, messages[0] = system],
     "archive": [every message ever removed from the live context, oldest first],
     "usage": {"prompt_tokens", "completion_tokens", "total_tokens"}}

Written atomically (temp file in the same directory, fsync, os.replace), mode 0600, directory 0700.
Secrets given to `save` (the API key) are replaced by "[redacted]" wherever they appear. A file that
cannot be read or parsed raises SessionError naming the path and how to start fresh; it is never
overwritten by this module.
"""

from __future__ import annotations

import errno
import json
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nanohermes.errors import SessionError
from nanohermes.fileio import atomic_write, ensure_private_dir
from nanohermes.memory.security import redact_known
from nanohermes.types import Message, Usage, message_problem, message_text

SESSION_VERSION = 1
REDACTED = "[redacted]"


@dataclass
class SessionData:
    """What a session file holds."""

    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    created: str = field(default_factory=lambda: now_iso())
    updated: str = field(default_factory=lambda: now_iso())
    model: str | None = None
    workspace: str = ""
    messages: list[Message] = field(default_factory=list)
    archive: list[Message] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": SESSION_VERSION,
            "id": self.id,
            "created": self.created,
            "updated": self.updated,
            "model": self.model,
            "workspace": self.workspace,
            "messages": self.messages,
            "archive": self.archive,
            "usage": self.usage.to_dict(),
        }


@dataclass(frozen=True)
class SessionInfo:
    """One line of `/sessions`: a recent session to resume."""

    path: Path
    updated: str
    messages: int
    title: str


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SessionFile:
    """One session file on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def exists(self) -> bool:
        return self.path.is_file()

    def load(self) -> SessionData:
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise self._corrupt(f"cannot be read ({_reason(err)})") from None
        try:
            raw = json.loads(text)
        except ValueError as err:
            raise self._corrupt(f"is not valid JSON ({err})") from None
        return self._parse(raw)

    def save(self, data: SessionData, *, secrets: tuple[str, ...] = ()) -> None:
        """Write atomically with `updated` set to now. Raises SessionError when it cannot."""
        self.write(self.render(data, secrets=secrets))

    @staticmethod
    def render(data: SessionData, *, secrets: tuple[str, ...] = ()) -> str:
        """The file's text for `data` (with `updated` set to now and secrets redacted)."""
        data.updated = now_iso()
        text = json.dumps(data.to_dict(), ensure_ascii=False, indent=1)
        return redact_known(text, secrets, REDACTED)

    def write(self, text: str) -> None:
        """Write `text` (from `render`) atomically: temp file, fsync, rename. Raises SessionError."""
        try:
            ensure_private_dir(self.path.parent)
            atomic_write(self.path, text.encode("utf-8"))
        except OSError as err:
            problem = f"cannot write session file {self.path}: {_reason(err)}"
            raise SessionError(problem, _write_hint(err)) from None

    def _corrupt(self, problem: str) -> SessionError:
        return SessionError(
            f"session file {self.path} {problem}; it was left untouched",
            "start fresh with --session NEW-NAME, or move that file away",
        )

    def _parse(self, raw: Any) -> SessionData:
        if not isinstance(raw, dict):
            raise self._corrupt("does not hold a JSON object")
        version = raw.get("version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise self._corrupt("has no version number")
        if version > SESSION_VERSION:
            raise SessionError(
                f"session file {self.path} has format version {version}, newer than this nanohermes "
                f"understands ({SESSION_VERSION}); it was left untouched",
                "upgrade nanohermes or start fresh with --session NEW-NAME",
            )
        messages = self._messages(raw.get("messages"), "messages")
        archive = self._messages(raw.get("archive", []), "archive")
        return SessionData(
            id=str(raw.get("id") or uuid.uuid4().hex[:12]),
            created=str(raw.get("created") or ""),
            updated=str(raw.get("updated") or ""),
            model=raw.get("model") if isinstance(raw.get("model"), str) else None,
            workspace=str(raw.get("workspace") or ""),
            messages=messages,
            archive=archive,
            usage=Usage.from_dict(raw.get("usage")),
        )

    def _messages(self, value: Any, name: str) -> list[Message]:
        if not isinstance(value, list):
            raise self._corrupt(f"has no '{name}' list")
        for index, message in enumerate(value):
            problem = message_problem(message)
            if problem is not None:
                raise self._corrupt(f"has an invalid entry {name}[{index}] ({problem})")
        return list(value)


def resolve_session_path(sessions_dir: Path, name_or_path: str) -> Path:
    """`--session`: a value holding '/' or ending in .json is a path; anything else a name."""
    value = name_or_path.strip()
    if not value:
        raise SessionError("--session needs a name or a path", "e.g. --session refactor")
    if "/" in value or os.sep in value or value.endswith(".json"):
        return Path(value).expanduser()
    return sessions_dir / f"{value}.json"


def new_session_path(sessions_dir: Path, now: datetime | None = None) -> Path:
    """`<sessions_dir>/<timestamp>.json`, with a numeric suffix when that name is taken."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    path = sessions_dir / f"{stamp}.json"
    number = 2
    while path.exists():
        path = sessions_dir / f"{stamp}-{number}.json"
        number += 1
    return path


def latest_session(sessions_dir: Path) -> Path | None:
    """The most recently updated session file (by modification time), or None."""
    files = recent_session_files(sessions_dir)
    return files[0][0] if files else None


def recent_session_files(sessions_dir: Path) -> list[tuple[Path, float]]:
    """Session files with their modification times, newest first (one stat per file)."""
    stamped = [(path, _mtime(path)) for path in _session_files(sessions_dir)]
    return sorted(stamped, key=lambda item: item[1], reverse=True)


def describe_session(path: Path) -> SessionInfo:
    """What `/sessions` shows of one file; an unreadable file gets a title saying so."""
    try:
        data = SessionFile(path).load()
    except SessionError:
        return SessionInfo(path, "", 0, "(unreadable session file)")
    first = next((m for m in data.messages if m.get("role") == "user"), None)
    title = " ".join(message_text(first).split())[:60] if first else "(empty)"
    return SessionInfo(path, data.updated, len(data.messages), title)


def list_sessions(sessions_dir: Path, limit: int = 10) -> list[SessionInfo]:
    """Recent sessions, newest first."""
    return [describe_session(path) for path, _ in recent_session_files(sessions_dir)[:limit]]


def _session_files(sessions_dir: Path) -> list[Path]:
    try:
        return [p for p in sessions_dir.glob("*.json") if p.is_file()]
    except OSError:
        return []


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _reason(err: Exception) -> str:
    return err.strerror if isinstance(err, OSError) and err.strerror else str(err)


def _write_hint(err: OSError) -> str:
    """How to fix a failed write: only a permission problem is one of permissions."""
    if err.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return "free some disk space; the previous version of the file is intact"
    if err.errno in (errno.EACCES, errno.EPERM):
        return "check the directory's permissions"
    if err.errno == errno.EROFS:
        return "the file system is read-only; use --session with a path elsewhere"
    return ""
