"""Small file operations for the store: whole reads, quiet unlinks, free names, special files and
symlinks (writes: nanohermes.core.fileio)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from nanohermes.core.errors import StoreError


def read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def free_name(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def special_kind(mode: int) -> str | None:
    """What a non-regular file is ("a FIFO", …); None for a regular file. Special files are never
    opened: reading a FIFO blocks for ever, a device never ends."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def not_regular(path: Path, what: str) -> StoreError:
    return StoreError(
        f"{path} is {what}, not a memory file; nanohermes leaves it alone",
        "move it away, or use --memory-dir to point at another directory",
    )


def stat_memory_file(path: str) -> os.stat_result | None:
    """The memory file's status through any symlink; None when it does not exist (a dangling link
    included: the first write creates its target). StoreError for a symlink loop or a special file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise StoreError(
                f"{path} is a symlink loop", "remove the link or point it at a real file"
            ) from None
        raise
    what = special_kind(st.st_mode)
    if what is not None:
        raise not_regular(Path(path), what)
    return st
