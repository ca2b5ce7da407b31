"""Session files (SPEC §4.4; the format is in sessions/README.md). A save appends to the archive
sidecar (fsynced) before it replaces the main file atomically; the main file's `archive_bytes` says how
much of the archive it vouches for, so the next save cuts off what a crash in between left."""

from __future__ import annotations

import errno
import json
import os
import stat
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nanohermes.core.errors import JSON_ERRORS, SessionError, json_problem, reason
from nanohermes.core.fileio import atomic_write, ensure_private_dir, read_regular, write_all, write_target
from nanohermes.core.types import (
    MAX_COUNT,
    Message,
    Usage,
    as_count,
    hide_secrets,
    message_problem,
    message_text,
)

SESSION_VERSION = 2
ARCHIVE_SUFFIX = ".archive.jsonl"
HEADER_READ = 16 * 1024
_MESSAGES_KEY = ',"messages":'
TITLE_CHARS = 60
MAX_NESTING = 100
"""A message nested deeper is corrupt: one that loads (about 900 levels do) fails every later request
and save, the JSON encoder running out of recursion deeper in the stack."""
FRESH_HINT = "start fresh with --session NEW-NAME, or move that file away"
NEWER_HINT = "upgrade nanohermes or start fresh with --session NEW-NAME"
LINK_HINT = "remove it or point the link at a real file, or use another --session"
EDITOR_HINTS = {
    FRESH_HINT: "start a new session, or move that file away",
    NEWER_HINT: "upgrade nanohermes or start a new session",
    LINK_HINT: "remove it or point the link at a real file, or start a new session",
}
"""The hints for an editor's user (ACP): there is no --session to give there."""
OPEN_SIDECAR = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
"""Never through a symlink (cutting a stale tail would cut its target); O_NONBLOCK: a FIFO in its
place fails to open (ENXIO) instead of hanging the save."""


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class SessionData:
    """`archive`: archived messages not yet in the sidecar (a version 1 file's, until its first save);
    `archived` counts those already there."""

    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    created: str = field(default_factory=now_iso)
    updated: str = field(default_factory=now_iso)
    model: str | None = None
    workspace: str = ""
    messages: list[Message] = field(default_factory=list)
    archive: list[Message] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    title: str = ""
    archived: int = 0
    archive_bytes: int = 0

    def header(self) -> dict[str, Any]:
        names = ("id", "created", "updated", "model", "workspace", "title")
        header = {"version": SESSION_VERSION} | {name: getattr(self, name) for name in names}
        header |= {"message_count": len(self.messages), "archived": self.archived}
        return header | {"archive_bytes": self.archive_bytes, "usage": self.usage.to_dict()}


@dataclass
class Snapshot:
    """One save, rendered on the caller's thread (consistent), written on the writer's."""

    header: dict[str, Any]
    messages_json: str
    archive_lines: list[str]
    secrets: tuple[str, ...] = ()

    def text(self, archive_bytes: int) -> str:
        header = _json({**self.header, "archive_bytes": archive_bytes})
        return hide_secrets(header[:-1] + _MESSAGES_KEY + self.messages_json + "}", self.secrets)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def encode(text: str) -> bytes:
    """JSON text as UTF-8; a lone surrogate (a file name that is not UTF-8, half of a split emoji)
    is written as its JSON escape, which loads back as the same string."""
    return text.encode("utf-8", "backslashreplace")


def title_of(messages: list[Message]) -> str:
    first = next((m for m in messages if m.get("role") == "user"), None)
    return " ".join(message_text(first).split())[:TITLE_CHARS] if first else ""


class SessionFile:
    """One session file and its archive sidecar. Writes come from one thread at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path  # as the user named it; `target` is where it is written (through a link)
        self.target = write_target(path)
        self.archive_path = self.target.with_name(self.target.stem + ARCHIVE_SUFFIX)
        self._archive_bytes: int | None = None  # what the main file on disk vouches for; None: unknown
        self._unwritten: list[str] = []  # archive lines of a failed save, written first by the next

    def exists(self) -> bool:
        """False for a dangling link too (the first save creates its target). SessionError for a
        symlink loop or anything but a regular file: never read, never replaced."""
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            return False
        except OSError as err:
            what = "a symlink loop" if err.errno == errno.ELOOP else reason(err)
        else:
            if stat.S_ISREG(mode):
                return True
            what = "a directory" if stat.S_ISDIR(mode) else "a FIFO, socket or device"
        problem = f"session file {self.path} is {what}, not a session file; it was left untouched"
        raise SessionError(problem, LINK_HINT)

    def _corrupt(self, problem: str) -> SessionError:
        return SessionError(f"session file {self.path} {problem}; it was left untouched", FRESH_HINT)

    def load(self) -> SessionData:
        try:  # never blocks: a FIFO or device in the file's place is refused unread
            text = read_regular(self.path, MAX_COUNT)[0].decode("utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise self._corrupt(f"cannot be read ({reason(err)})") from None
        try:
            raw = json.loads(text)
        except JSON_ERRORS as err:
            raise self._corrupt(f"is not valid JSON ({json_problem(err)})") from None
        data = self._parse(raw)
        self._archive_bytes = data.archive_bytes
        return data

    def load_archive(self) -> list[Message]:
        """Every archived message, oldest first: the sidecar's vouched-for lines, then a version 1
        file's own archive."""
        data = self.load()
        try:  # as the writer: never through a symlink, never a FIFO or device
            raw = read_regular(self.archive_path, data.archive_bytes, follow=False)[0]
        except FileNotFoundError:
            raw = b""
        except OSError as err:
            problem = f"has an unreadable archive {self.archive_path.name} ({reason(err)})"
            raise self._corrupt(problem) from None
        messages: list[Message] = []
        for number, line in enumerate(raw.splitlines(), start=1):
            try:
                messages.append(json.loads(line))
            except JSON_ERRORS:
                raise self._corrupt(f"has a broken line {number} in {self.archive_path.name}") from None
        return messages + data.archive

    def save(self, data: SessionData, *, secrets: tuple[str, ...] = ()) -> None:
        self.write(self.render(data, secrets=secrets))

    @staticmethod
    def render(data: SessionData, *, secrets: tuple[str, ...] = ()) -> Snapshot:
        """The archived messages it carries leave `data.archive` and count in `data.archived`."""
        data.updated = now_iso()
        data.title = data.title or title_of(data.archive) or title_of(data.messages)
        lines = [_json(m) for m in data.archive]
        data.archived += len(lines)
        data.archive.clear()
        return Snapshot(data.header(), _json(data.messages), lines, secrets)

    def write(self, snapshot: Snapshot) -> None:
        """Raises SessionError; a failed save's archive lines go with the next."""
        lines = self._unwritten + snapshot.archive_lines
        self._unwritten = lines
        existed = self.exists()  # a symlink loop, a FIFO or a device is never replaced
        try:
            ensure_private_dir(self.target.parent)  # a link's own folder is there: the link is
            size = self._append_archive(lines, snapshot.secrets)
            atomic_write(self.target, encode(snapshot.text(size)))  # through a symlink: the link stays
        except OSError as err:
            problem = f"cannot write session file {self.path}: {reason(err)}"
            raise SessionError(problem, _write_hint(err, existed)) from None
        self._unwritten = []
        self._archive_bytes = size

    def _append_archive(self, lines: list[str], secrets: tuple[str, ...]) -> int:
        """Cut what no main file vouches for, append `lines`, fsync; return the sidecar's size."""
        expected = self._archive_bytes
        if not lines and (expected is not None or not self.archive_path.exists()):
            return expected or 0
        fd = os.open(self.archive_path, OPEN_SIDECAR | getattr(os, "O_NONBLOCK", 0), 0o600)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise OSError(errno.EINVAL, f"{self.archive_path.name} is not a regular file")
            if expected is None:  # a new session, or a version 1 file: no sidecar is vouched for yet
                header = read_header(self.path) or {}
                expected = info.st_size if header.get("version") == SESSION_VERSION else 0
            size = info.st_size
            if size > expected:
                os.ftruncate(fd, expected)
                size = expected
            if lines:
                data = encode(hide_secrets("".join(line + "\n" for line in lines), secrets))
                os.lseek(fd, size, os.SEEK_SET)
                write_all(fd, data)
                os.fsync(fd)
                size += len(data)
        finally:
            os.close(fd)
        return size

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
                NEWER_HINT,
            )
        old = version < SESSION_VERSION  # version 1: the archive inside, no counts
        model = raw.get("model")
        return SessionData(
            id=str(raw.get("id") or uuid.uuid4().hex[:12]),
            created=str(raw.get("created") or ""),
            updated=str(raw.get("updated") or ""),
            model=model if isinstance(model, str) else None,
            workspace=str(raw.get("workspace") or ""),
            messages=self._messages(raw.get("messages"), "messages"),
            archive=self._messages(raw.get("archive", []), "archive") if old else [],
            usage=Usage.from_dict(raw.get("usage")),
            title=str(raw.get("title") or ""),
            archived=0 if old else as_count(raw.get("archived")),
            archive_bytes=0 if old else as_count(raw.get("archive_bytes")),
        )

    def _messages(self, value: Any, name: str) -> list[Message]:
        if not isinstance(value, list):
            raise self._corrupt(f"has no '{name}' list")
        for index, message in enumerate(value):
            problem = message_problem(message)
            if problem is None and nesting(message) > MAX_NESTING:
                problem = f"nested more than {MAX_NESTING} levels deep"
            if problem is not None:
                raise self._corrupt(f"has an invalid entry {name}[{index}] ({problem})")
        return list(value)


def read_header(path: Path) -> dict[str, Any] | None:
    """From the file's first few kilobytes (a version 1 file's: the whole file); None when unreadable."""
    try:
        with path.open("rb") as handle:
            head = handle.read(HEADER_READ).decode("utf-8", "replace")
        cut = head.find(_MESSAGES_KEY)
        header = json.loads(head[:cut] + "}") if cut >= 0 else None
    except (OSError, *JSON_ERRORS):
        header = None
    if isinstance(header, dict):
        return header
    try:
        data = SessionFile(path).load()
    except SessionError:
        return None
    return data.header() | {"version": 1, "title": title_of(data.messages)}


def nesting(value: Any) -> int:
    """Levels of lists and objects in `value`, counted without recursion up to MAX_NESTING + 1."""
    deepest, pending = 0, [(value, 1)] if isinstance(value, dict | list) else []
    while pending and deepest <= MAX_NESTING:
        item, depth = pending.pop()
        deepest = max(deepest, depth)
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, dict | list):
                pending.append((child, depth + 1))
    return deepest


def _write_hint(err: OSError, existed: bool) -> str:
    """The previous version is said intact only where there is one (not at a new session's first save)."""
    if err.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return "free some disk space" + ("; the previous version of the file is intact" if existed else "")
    if err.errno in (errno.EACCES, errno.EPERM):
        return "check the directory's permissions"
    if err.errno == errno.EROFS:
        return "the file system is read-only; use --session with a path elsewhere"
    return ""
