"""memory.json on disk (SPEC §3.2): read without a lock (writers replace it atomically), written under
a cross-process lock, one entry a line so diffs stay small. A symlink is followed; a symlink loop or a
special file is a StoreError."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from nanohermes.core.errors import StoreError
from nanohermes.core.fileio import atomic_write, ensure_private_dir, write_target
from nanohermes.memory.entry import json_text

MEMORY_FILE = "memory.json"
FORMAT_VERSION = 1
LOCK_TIMEOUT_S = 30.0
TEMP_PREFIX = ".memory.json."  # `atomic_write` adds a random part and `.tmp`
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in never blocks the open
# The process is short of something, the file is not bad: no reason to move it aside.
_TRANSIENT = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS, errno.EAGAIN, errno.EINTR})
_SPECIAL = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket"}
_SPECIAL |= {stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}
_HEAD = b'{\n  "version": %d,\n  "entries": ' % FORMAT_VERSION

Identity = tuple[int, int, int, int, int]
"""(device, inode, mtime_ns, ctime_ns, size): the file version a store's entries came from."""


class FormatError(ValueError):
    """memory.json does not hold a memory store."""


@dataclass
class Parsed:
    """memory.json's entry items, format version and unknown top-level fields as (name, JSON text)."""

    items: list[object]
    version: int
    top: list[tuple[str, str]]


def parse(raw: bytes) -> Parsed:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise FormatError(f"not valid JSON: {err}") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries", []), list):
        raise FormatError("no 'entries' list at the top level")
    version = data.get("version", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise FormatError(f"bad version {version!r}")
    top = [(name, json_text(value)) for name, value in data.items() if name not in ("version", "entries")]
    return Parsed(data.get("entries", []), version, top)


def dump(lines: list[bytes], kept: list[str], top: list[tuple[str, str]]) -> list[bytes]:
    """memory.json v1 as pieces to write gathered: one entry a line, the kept items after them."""
    items = lines + [text.encode() for text in kept]
    tail = "".join(f",\n  {json_text(name)}: {value}" for name, value in top).encode() + b"\n}\n"
    return [_HEAD, b"[\n    ", b",\n    ".join(items), b"\n  ]", tail] if items else [_HEAD, b"[]", tail]


def identity(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


class MemoryFile:
    """One memory.json and its lock. `shared`: a file to commit (the team memory), mode 0644."""

    def __init__(self, directory: Path, lock: Path | None = None, shared: bool = False) -> None:
        self.dir, self.shared = directory, shared
        self.path = directory / MEMORY_FILE
        self.lock = FileLock(lock or self.dir / f"{MEMORY_FILE}.lock", mode=0o600, thread_local=False)

    def _regular(self, st: os.stat_result) -> os.stat_result:
        """`st`, when it is a regular file's: a FIFO would block for ever, a device never end."""
        if stat.S_ISREG(st.st_mode):
            return st
        raise StoreError(
            f"{self.path} is {_SPECIAL.get(stat.S_IFMT(st.st_mode), 'not a regular file')}, not a memory "
            "file; nanohermes leaves it alone",
            "move it away, or use --memory-dir to point at another directory",
        )

    def _failed(self, err: OSError) -> OSError:
        """`err`, to raise (the file is unreadable), unless it is a symlink loop or transient."""
        if err.errno in _TRANSIENT:
            raise StoreError(
                f"cannot read {self.path} now: {err.strerror or err}", "it is left as it is; try again"
            )
        if err.errno == errno.ELOOP:
            raise StoreError(f"{self.path} is a symlink loop", "remove the link or point it at a real file")
        return err

    def version(self) -> Identity | None:
        """The file's version; None when it does not exist (a dangling link included: the first
        write creates its target). OSError when the file is unreadable."""
        try:
            return identity(self._regular(os.stat(self.path)))
        except FileNotFoundError:
            return None
        except OSError as err:
            raise self._failed(err) from None

    def read(self, limit: int | None = None) -> tuple[Identity, bytes] | None:
        """The file's version and bytes; None when it is missing. FormatError when over `limit` bytes."""
        try:
            fd = os.open(self.path, _READ_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as err:
            raise self._failed(err) from None
        try:
            st = self._regular(os.fstat(fd))  # (replaced by a special file since the stat?)
            if limit is not None and st.st_size > limit:
                raise FormatError(f"is {st.st_size:,} bytes, over the limit of {limit:,}")
            data = b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
        except OSError as err:
            raise self._failed(err) from None
        finally:
            os.close(fd)
        return identity(st), data

    def move_aside(self) -> Path:
        """Rename the unreadable file to a free `memory.json.broken-<ts>[-n]` (call under the lock)."""
        base = self.path.with_name(f"{MEMORY_FILE}.broken-{int(time.time())}")
        broken, n = base, 1
        while broken.exists():
            n += 1
            broken = base.with_name(f"{base.name}-{n}")
        os.replace(self.path, broken)
        return broken

    def acquire(self) -> contextlib.AbstractContextManager[object]:
        """The cross-process lock, taken (the directory made 0700 if missing), as a context; or StoreError."""
        try:
            if self.shared:
                self.dir.mkdir(exist_ok=True)
            else:
                ensure_private_dir(self.dir)
        except OSError as err:
            raise StoreError(f"cannot create {self.dir}: {err.strerror or err}") from None
        try:
            return self.lock.acquire(timeout=LOCK_TIMEOUT_S, poll_interval=0.01)
        except Timeout:
            raise StoreError(
                f"memory is locked by another process for more than {LOCK_TIMEOUT_S:.0f} s "
                f"({self.lock.lock_file})",
                "close other nanohermes sessions and try again",
            ) from None
        except OSError as err:
            raise StoreError(f"cannot lock {self.lock.lock_file}: {err.strerror or err}") from None

    def write(self, pieces: list[bytes], version: int) -> Identity:
        """Replace memory.json, read as format `version`, with `pieces` (under the lock); its version."""
        if version > FORMAT_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer nanohermes (format version {version})",
                "upgrade nanohermes to change it",
            )
        try:
            for leftover in self.dir.glob(f"{TEMP_PREFIX}*.tmp"):  # a killed writer's: we hold the lock
                leftover.unlink(missing_ok=True)
            atomic_write(write_target(self.path), pieces, temp_prefix=TEMP_PREFIX)
            if self.shared:
                os.chmod(self.path, 0o644)
            return identity(os.stat(self.path))
        except OSError as err:
            raise StoreError(f"cannot write {self.path}: {err.strerror or err}") from None
