"""Private, crash-safe files. Stdlib only. A write goes to a fsynced temp file (0600) beside the target,
is renamed over it and the directory fsynced: readers see the old file or the new one, never half."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def ensure_private_dir(directory: Path) -> None:
    """Create `directory` and any missing parents as 0700. Raises OSError."""
    if directory.is_dir():
        return  # the common case: one stat, not one per ancestor
    missing = [d for d in (directory, *directory.parents) if not d.exists()]
    for path in reversed(missing):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            if path.is_dir():
                continue  # made by another process in between
            # a link that leads nowhere (or loops): not "taken", which callers may retry forever
            raise NotADirectoryError(
                errno.ENOTDIR, "not a directory (a link that leads nowhere?)", str(path)
            ) from None
        if os.name == "posix":
            os.chmod(path, 0o700)  # mkdir's mode is filtered by the umask


def write_target(path: Path) -> Path:
    """Through a symlink to its target, the link staying a link (a dotfiles repository's file)."""
    return Path(os.path.realpath(path)) if os.path.islink(path) else path


def resolved(path: Path) -> Path:
    """Links followed as far as they go; a link loop or an unreadable folder leaves it as given."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def write_all(fd: int, data: bytes | Sequence[bytes]) -> None:
    view = memoryview(data if isinstance(data, bytes | bytearray | memoryview) else b"".join(data))
    while view:
        written = os.write(fd, view)
        view = view[written:]


def atomic_write(path: Path, data: bytes | Sequence[bytes], *, temp_prefix: str = "") -> None:
    """On failure the old file is untouched and the OSError propagates."""
    _put_in_place(_write_temp(path, data, temp_prefix), path)


class StagedWrite:
    """The new content of `path`, written and fsynced beside it but not yet in place: for a write that
    must be known to fit on the disk before something else is changed (a rename needs no space)."""

    def __init__(self, path: Path, data: bytes) -> None:
        self.path = path
        self._temp = _write_temp(path, data)

    def commit(self) -> None:
        temp, self._temp = self._temp, ""
        if temp:
            _put_in_place(temp, self.path)

    def discard(self) -> None:
        temp, self._temp = self._temp, ""
        if temp:
            _unlink_quietly(temp)


def _write_temp(path: Path, data: bytes | Sequence[bytes], prefix: str = "") -> str:
    """A new fsynced temp file (0600) beside `path`; on failure nothing is left behind."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=prefix or f".{path.name}.", suffix=".tmp")  # 0600
    try:
        write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        _unlink_quietly(temp)
        raise
    finally:
        os.close(fd)
    return temp


def _put_in_place(temp: str, path: Path) -> None:
    try:
        os.replace(temp, path)
    except BaseException:
        _unlink_quietly(temp)
        raise
    if os.name == "posix":  # the directory's fsync makes the rename durable, where the platform can
        with contextlib.suppress(OSError):  # EINVAL where the file system cannot; the data is synced
            fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _unlink_quietly(temp: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)


def read_regular(path: Path, limit: int, *, follow: bool = True) -> tuple[bytes, int]:
    """At most `limit` bytes of the regular file `path`, and its size. Raises OSError for anything else
    (a FIFO or device unread, the open never blocks; a symlink unless `follow`). A file of size 0 is
    not read: /proc and /sys files report 0, and reading one may block or consume it (/proc/kmsg)."""
    flags = os.O_RDONLY | _NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags if follow else flags | getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, socket or device)")
        chunks: list[bytes] = []
        got = 0
        while st.st_size and got < limit:
            # the size is known: one read takes it all (a 68 MB session: no thousand small reads)
            chunk = os.read(fd, min(limit - got, max(st.st_size - got, 0) + 65536))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks), st.st_size
    finally:
        os.close(fd)


def read_small_text(path: Path, limit: int) -> str:
    """A file over `limit` bytes is refused, not read whole. Raises OSError or UnicodeDecodeError."""
    data, size = read_regular(path, limit + 1)
    if max(len(data), size) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit:,} bytes")
    return data.decode("utf-8")
