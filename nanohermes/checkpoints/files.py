"""Files on disk as checkpoint states: read one, compare it, put one back. Contents are named by their
git blob id (the shadow repository's) or by the sha256 of a kept copy (`copies/<sha256>`)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from pathlib import Path

from nanohermes.checkpoints.journal import CheckpointError, FileState
from nanohermes.core.errors import ToolError
from nanohermes.core.fileio import atomic_write, ensure_private_dir
from nanohermes.tools.paths import Workspace

LINK_MODE = 0o120000
FILE_MODE = 0o100644
EXEC_MODE = 0o100755


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def state_of(path: Path, store: str, keep_in: Path | None = None) -> FileState | None:
    """The state `store` records for the file or symlink `path` now (None when absent): git's mode and
    blob id, or ("copies") the exact permission bits and the sha256 of its bytes, a copy of them kept in
    `keep_in` when given. Raises CheckpointError for anything else (a directory, a FIFO, a device)."""
    try:
        info = os.lstat(path)
        link = stat.S_ISLNK(info.st_mode)
        if not link and not stat.S_ISREG(info.st_mode):
            raise CheckpointError(f"{path} is not a regular file")
        data = os.fsencode(os.readlink(path)) if link else path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        raise CheckpointError(f"cannot read {path}: {err.strerror}") from None
    if store == "git":
        mode = LINK_MODE if link else EXEC_MODE if info.st_mode & stat.S_IXUSR else FILE_MODE
        return FileState(mode, git_blob_id(data))
    digest = hashlib.sha256(data).hexdigest()
    target = None if keep_in is None else keep_in / digest[:2] / digest
    if target is not None and not target.exists():
        try:
            ensure_private_dir(target.parent)
            atomic_write(target, data)
        except OSError as err:
            raise CheckpointError(f"cannot keep a copy of {path}: {err.strerror}") from None
    return FileState(LINK_MODE if link else 0o100000 | stat.S_IMODE(info.st_mode), digest)


def same_as(path: Path, root: Path, state: FileState | None, store: str) -> bool:
    """Whether `path` is now exactly `state` (contents and mode); unreadable counts as different, and
    so does a path under a directory of `root` that became a symlink (its file lies elsewhere now)."""
    if linked_parent(path, root) is not None:
        return False
    try:
        return state_of(path, store) == state
    except CheckpointError:
        return False


def read_copy(copies: Path, digest: str) -> bytes:
    try:
        return (copies / digest[:2] / digest).read_bytes()
    except OSError as err:
        raise CheckpointError(f"a kept copy is missing ({digest[:12]}): {err.strerror}") from None


def prune_copies(copies: Path, keep: set[str]) -> None:
    for copy in copies.glob("*/*"):
        if copy.name not in keep:
            with contextlib.suppress(OSError):
                copy.unlink()


def remove(path: Path, root: Path) -> None:
    """Remove a file (or symlink) the turn created, then parent directories left empty by it."""
    _refuse_in_the_way(path, root)
    try:
        path.unlink(missing_ok=True)
    except OSError as err:
        raise CheckpointError(f"cannot remove {path}: {err.strerror}") from None
    for folder in (parent for parent in path.parents if parent != root and parent.is_relative_to(root)):
        try:
            folder.rmdir()
        except OSError:  # not empty: neither is any above it
            break


def put_back(path: Path, root: Path, state: FileState, data: bytes, exact_mode: bool) -> None:
    """Make `path` hold `data` with `state`'s mode (exactly, or git's executable bit only)."""
    _refuse_in_the_way(path, root)
    try:
        if state.is_link:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.unlink(missing_ok=True)
            os.symlink(os.fsdecode(data), path)
            return
        if path.is_symlink():
            path.unlink()
        _write_bytes(path, root, data)
        now = stat.S_IMODE(path.stat().st_mode)  # a new file got the umask's mode
        os.chmod(path, stat.S_IMODE(state.mode) if exact_mode else _exec_bits(now, state.mode))
    except OSError as err:
        raise CheckpointError(f"cannot restore {path}: {err.strerror}") from None


def _refuse_in_the_way(path: Path, root: Path) -> None:
    """A directory now at `path`, or a symlink now between `root` and it (through which a write or
    an unlink would reach outside the workspace), must be moved away first."""
    if path.is_dir() and not path.is_symlink():
        raise CheckpointError(f"{path} is a directory now; move it away and undo again")
    link = linked_parent(path, root)
    if link is not None:
        raise CheckpointError(f"{link} is a symlink now, in the way of {path}; move it away and undo again")


def _write_bytes(path: Path, root: Path, data: bytes) -> None:
    """Make `path` hold `data`, never half written (the workspace tools' atomic write); a file with
    other hard links is rewritten in place instead: a rename would split it from them."""
    info = os.lstat(path) if os.path.lexists(path) else None
    if info is not None and stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        path.write_bytes(data)
        return
    try:
        Workspace(root).replace_into(path, data)
    except ToolError as err:
        raise CheckpointError(f"cannot restore {path}: {err.one_line().removeprefix(f'{path}: ')}") from None


def _exec_bits(current: int, mode: int) -> int:
    """`current` permissions with the executable bits git's `mode` implies (x wherever r is)."""
    if mode == EXEC_MODE:
        return current | (current & 0o444) >> 2
    return current & ~0o111


def linked_parent(path: Path, root: Path) -> Path | None:
    """The first directory between `root` and `path` that is a symlink now (outermost first), or None."""
    inside = (parent for parent in reversed(path.parents) if parent != root and parent.is_relative_to(root))
    return next((parent for parent in inside if parent.is_symlink()), None)
