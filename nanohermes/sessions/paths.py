"""Where sessions live (SPEC §4.4): `--session` names and paths, new names, a workspace's latest."""

from __future__ import annotations

import contextlib
import os
import re
import stat
from datetime import datetime
from pathlib import Path

from nanohermes.core.errors import ConfigError, reason
from nanohermes.core.fileio import ensure_private_dir, resolved
from nanohermes.sessions.lock import lock_path
from nanohermes.sessions.store import read_header

SESSION_NAME = re.compile(r"[A-Za-z0-9._-]+")  # and not '.' or '..'


def resolve_session_path(sessions_dir: Path, name_or_path: str) -> Path:
    """`--session`: a path ending in .json, or a plain name in `sessions_dir`. Anything else (`a/b`,
    `../x`, a directory) raises ConfigError: a name never leaves `sessions_dir`."""
    value = name_or_path.strip()
    if "\0" in value:  # no file name holds one: the OS calls would raise ValueError, not OSError
        raise ConfigError(
            f"--session {value!r} contains a NUL character", "give a session name or a .json path"
        )
    if value.endswith(".json"):
        path = Path(value).expanduser()
    elif SESSION_NAME.fullmatch(value) and value not in (".", ".."):
        path = sessions_dir / f"{value}.json"
    else:
        raise ConfigError(
            f"--session {value!r} is neither a session name (letters, digits, '-', '_', '.') "
            "nor a path ending in .json",
            "e.g. --session refactor, or --session notes/refactor.json",
        )
    try:
        regular = path.is_file() or not path.exists()
    except OSError as err:  # a name too long for the file system: a usage error, not a crash
        raise ConfigError(
            f"--session {value!r} cannot be used: {reason(err)}", "give a shorter path"
        ) from None
    if not regular:  # a directory, a FIFO, a device
        raise ConfigError(
            f"--session {value!r} is not a regular file (a directory, FIFO or device: {path})",
            "give a .json file or a name",
        )
    return path


def new_session_path(sessions_dir: Path, now: datetime | None = None) -> Path:
    """`<timestamp>.json`, with a suffix when taken. The name is reserved by creating its lock file
    exclusively: the session file appears only after the first turn, so two nanohermes started in the
    same second would otherwise pick the same name."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    path = sessions_dir / f"{stamp}.json"
    number = 2
    while path.exists() or not _reserve(path):
        path = sessions_dir / f"{stamp}-{number}.json"
        number += 1
    return path


def _reserve(path: Path) -> bool:
    """False when `path`'s lock file exists (the name is taken)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        ensure_private_dir(path.parent)
        os.close(os.open(lock_path(path), flags, 0o600))
    except FileExistsError:
        return False
    except OSError:
        return True  # nothing can be reserved here: locking the session will name the cause
    return True


def latest_session(sessions_dir: Path, workspace: Path | None = None) -> Path | None:
    """The newest session file (of `workspace` when given; an unreadable file belongs to none)."""
    for path, _ in recent_session_files(sessions_dir):
        if workspace is None or same_place((read_header(path) or {}).get("workspace"), workspace):
            return path
    return None


def same_place(recorded: object, workspace: Path) -> bool:
    return isinstance(recorded, str) and bool(recorded) and resolved(Path(recorded)) == resolved(workspace)


def recent_session_files(sessions_dir: Path) -> list[tuple[Path, float]]:
    stamped: list[tuple[Path, float]] = []
    with contextlib.suppress(OSError):
        for path in sessions_dir.glob("*.json"):
            with contextlib.suppress(OSError):
                info = path.stat()
                if stat.S_ISREG(info.st_mode):
                    stamped.append((path, info.st_mtime))
    return sorted(stamped, key=lambda item: item[1], reverse=True)


def session_title(path: Path) -> str:
    header = read_header(path)
    return "(unreadable session file)" if header is None else str(header.get("title") or "") or "(empty)"
