"""memory.json on disk: read through a cache, written atomically under two locks.

- Reads take no lock: writers replace the file atomically, so a reader sees the old or the new file.
  The parsed entries and their derived data are cached per file version (derived.py).
- The cache key is (device, inode, mtime_ns, ctime_ns, size). Every write makes a new inode
  (`os.replace` of a fresh temp file), and on POSIX the cached snapshot keeps its file open, so its
  inode number cannot be reused while it is cached: two writes within one timestamp tick that leave
  the same size still differ in inode, and the cache can never serve stale entries.
- Every read-modify-write (remember, forget, moving a corrupt file aside) holds the in-process lock
  and the cross-process file lock (locking.py), re-reads the file under them, and writes through
  `nanohermes.core.fileio.atomic_write` (temp file 0600 in the same directory, the lines written
  gathered, fsync, `os.replace`, fsync the directory).
- A file that cannot be read or parsed is never overwritten: it is renamed to
  `memory.json.broken-<ts>` and `on_notice` gets one line saying so.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from nanohermes.core.errors import StoreError
from nanohermes.core.fileio import atomic_write, ensure_private_dir, write_target
from nanohermes.memory.derived import Derived, WholeFile
from nanohermes.memory.entry import FORMAT_VERSION, Entry, FormatError
from nanohermes.memory.fileio import (
    free_name,
    not_regular,
    read_all,
    special_kind,
    stat_memory_file,
    unlink_quietly,
)
from nanohermes.memory.layout import changed_line, dump_blocks, lines_after, lines_end, removed_line, tail_of
from nanohermes.memory.locking import lock_for
from nanohermes.memory.snapshot import Identity, Snapshot, identity

MEMORY_FILE = "memory.json"
_TEMP_PREFIX = ".memory.json."
_TEMP_SUFFIX = ".tmp"  # as nanohermes.core.fileio.atomic_write names its temp files
_HOLD_INODE = os.name == "posix"
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)  # a FIFO never blocks
_TRANSIENT = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS, errno.EAGAIN, errno.EINTR})
"""Errors that say the process is short of something, not that the file is bad: no reason to move it aside."""


class MemoryFile:
    """One memory.json: its current snapshot and the writes that replace it.

    `follow` is called (with `mutex` held) with every snapshot installed, before it becomes current:
    a write's snapshot still knows its parent and delta, so what follows the entries (the search
    index, the duplicate keys) can update by what changed."""

    def __init__(
        self,
        directory: Path,
        mutex: threading.RLock,
        follow: Callable[[Snapshot], None],
        on_notice: Callable[[str], None] | None = None,
    ) -> None:
        self.dir = directory
        self.path = directory / MEMORY_FILE
        self.lock = lock_for(self.path)
        self.snapshot: Snapshot | None = None
        self.derived = Derived()  # documents, lines and parsed lines by entry id
        self._path = os.fspath(self.path)  # os.stat takes a str faster than a Path
        self._mutex = mutex  # guards the derived data and what follows the snapshots
        self._follow = follow
        self._on_notice = on_notice

    def current(self) -> Snapshot:
        try:
            st = stat_memory_file(self._path)  # StoreError for a symlink loop or a special file
        except OSError as err:
            self._check_transient(err)
            return self._quarantine(f"cannot stat it: {err.strerror or err}")
        if st is None:
            return self._empty()
        snap = self.snapshot
        if snap is not None and snap.identity == (
            st.st_dev,
            st.st_ino,
            st.st_mtime_ns,
            st.st_ctime_ns,
            st.st_size,
        ):  # _identity(st), inline: this runs on every search
            return snap
        return self._reload()

    def peek(self) -> bytes | None:
        """The file's bytes when it is a regular file that can be read now, else None (then a full
        read says what is wrong). Installs nothing: for the cold path (coldsearch.py)."""
        try:
            fd = os.open(self.path, _READ_FLAGS)
        except OSError:
            return None
        try:
            if special_kind(os.fstat(fd).st_mode) is not None:
                return None
            return read_all(fd)
        except OSError:
            return None
        finally:
            os.close(fd)

    def _empty(self) -> Snapshot:
        snap = self.snapshot
        if snap is None or snap.identity is not None:
            snap = Snapshot([], lines=[], by_id={})
            self.snapshot = snap
        return snap

    def _reload(self) -> Snapshot:
        try:
            fd = os.open(self.path, _READ_FLAGS)
        except FileNotFoundError:
            return self._empty()
        except OSError as err:
            self._check_transient(err)
            return self._quarantine(f"cannot open it: {err.strerror or err}")
        try:
            return self._install_open(fd)
        except (OSError, FormatError) as err:
            if isinstance(err, OSError):
                self._check_transient(err)
            reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            return self._quarantine(reason)

    def _check_transient(self, err: OSError) -> None:
        """StoreError, the file left where it is, when `err` says this process is short of file
        descriptors or memory: moving a sound memory.json aside for that would empty the memory."""
        if err.errno in _TRANSIENT:
            raise StoreError(
                f"cannot read {self.path} now: {err.strerror or err}", "it is left as it is; try again"
            ) from None

    def _install_open(self, fd: int) -> Snapshot:
        """Parse and install the file open at `fd`. On OSError or FormatError, `fd` is closed."""
        try:
            st = os.fstat(fd)
            what = special_kind(st.st_mode)
            if what is not None:  # replaced by a special file since the stat: never read it
                raise not_regular(self.path, what)
            version = identity(st)
            raw = read_all(fd)
            with self._mutex:
                snap = self._grown(raw) or self._one_line_changed(raw) or self._parsed(raw)
        except BaseException:
            os.close(fd)
            raise
        return self._install(snap, version, fd)

    def _parsed(self, raw: bytes) -> Snapshot:
        """A snapshot of the whole file (its unchanged lines are not parsed again)."""
        document = self.derived.parse(raw)
        entries = document.entries
        make = self.derived.doc
        docs = [make(entry) for entry in entries]
        self.derived.forget_stale(entries)
        snap = Snapshot(docs, document.version, entries=entries, kept=document.kept)
        end = lines_end(raw) if document.by_line else None
        if end is not None:
            snap.raw, snap.raw_end = raw, end
        return snap

    def _grown(self, raw: bytes) -> Snapshot | None:
        """The current snapshot with the entries another session appended, when that is all that
        changed in the file (checked in place: its old bytes are unchanged), else None."""
        old = self.snapshot
        offset = None if old is None or old.identity is None else old.lines_end_in(raw)
        if old is None or offset is None:
            return None
        lines = lines_after(raw, offset, tail_of(old.kept))
        entries = None if lines is None else self.derived.new_entries(lines, old.by_id)
        if lines is None or entries is None:
            return None
        snap = old.grown([self.derived.doc(entry) for entry in entries], lines)
        snap.raw, snap.raw_end = raw, len(raw) - len(tail_of(old.kept))
        return snap

    def _one_line_changed(self, raw: bytes) -> Snapshot | None:
        """The current snapshot with what another session changed in the file, when that is one
        entry replaced in place (a merge refreshed a memory), or one taken out with lines perhaps
        appended (a forget, or an append that evicted at the cap): the old and the new bytes are
        compared from both ends in place, so no unchanged line is split off or looked up. Else
        None (the whole file is read line by line)."""
        old = self.snapshot
        if old is None or old.identity is None or old.kept.lines or old.version != FORMAT_VERSION:
            return None
        before = old.raw
        if before is None and old.blocks is not None:  # our own write: the bytes we wrote
            before = b"".join(dump_blocks(old.blocks, old.kept))
        if before is None:
            return None
        tail = tail_of(old.kept)
        snap = self._replaced(old, changed_line(before, raw)) or self._removed(
            old, removed_line(before, raw, tail)
        )
        if snap is not None:
            snap.raw, snap.raw_end = raw, len(raw) - len(tail)
        return snap

    def _replaced(self, old: Snapshot, change: tuple[bytes, bytes] | None) -> Snapshot | None:
        index = None if change is None else self._position_of(old, change[0])
        if change is None or index is None:
            return None
        entry = self._entry_of(change[1])
        if entry is None or entry.id != old.entries[index].id:
            return None  # a kept entry or another id: the whole file decides
        return old.replaced(index, self.derived.doc(entry), change[1])

    def _removed(self, old: Snapshot, change: tuple[bytes, list[bytes]] | None) -> Snapshot | None:
        index = None if change is None else self._position_of(old, change[0])
        if change is None or index is None:
            return None
        added = change[1]
        entries = self.derived.new_entries(added, old.by_id) if added else []
        if entries is None:
            return None
        grown = old.grown([self.derived.doc(entry) for entry in entries], added) if added else old
        return grown.without({index})  # (after an append: one write's change from `old`)

    def _position_of(self, snap: Snapshot, line: bytes) -> int | None:
        """The position in `snap` of the entry read from or written as `line`, or None."""
        was = self.derived.by_line.get(line)
        index = None if was is None else snap.position(was.id)
        return None if index is None or snap.entries[index] is not was else index

    def _entry_of(self, line: bytes) -> Entry | None:
        """The entry of an entry line (None: a kept line, or one only the whole file decides)."""
        try:
            return self.derived.by_line.get(line) or self.derived.read_line(line, [])
        except WholeFile:
            return None

    def _install(self, snap: Snapshot, version: Identity, fd: int) -> Snapshot:
        snap.identity = version
        if _HOLD_INODE:
            snap.anchor(fd)
        else:
            os.close(fd)
        with self._mutex:
            self._follow(snap)  # our own write (with its parent and delta) or a reload
            snap.parent = None
            self.snapshot = snap
        return snap

    def _quarantine(self, reason: str) -> Snapshot:
        """Move an unreadable memory.json aside (never overwrite it), tell the user once, start empty."""
        with self.lock.hold():
            try:
                fd = os.open(self.path, _READ_FLAGS)
            except FileNotFoundError:
                return self._empty()
            except OSError:
                fd = -1
            if fd >= 0:  # another process may have repaired or replaced it meanwhile
                with contextlib.suppress(OSError, FormatError):
                    return self._install_open(fd)  # StoreError (now a special file) propagates
            broken = free_name(self.path.with_name(f"{MEMORY_FILE}.broken-{int(time.time())}"))
            try:
                os.replace(self.path, broken)
            except OSError as err:
                raise StoreError(
                    f"{self.path} is unreadable ({reason}) and could not be moved aside: "
                    f"{err.strerror or err}",
                    "move or repair the file by hand",
                ) from None
            self._notify(
                f"memory.json was unreadable ({reason}), moved to {broken}; starting with an empty memory"
            )
            return self._empty()

    def _notify(self, message: str) -> None:
        if self._on_notice is not None:
            self._on_notice(message)

    def check_writable(self, snap: Snapshot) -> None:
        if snap.version > FORMAT_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer nanohermes (format version {snap.version})",
                "upgrade nanohermes to change it",
            )

    def commit(self, snap: Snapshot) -> None:
        """Replace memory.json atomically with `snap`'s entries; on failure the old file stays."""
        self._prepare_dir()
        blocks = snap.blocks
        if blocks is None:
            snap.fill_lines([self.derived.line(entry) for entry in snap.entries])
            blocks = snap.blocks or []
        data = dump_blocks(blocks, snap.kept)
        try:
            target = write_target(self.path)  # through a symlink: the link stays, its target changes
            fd = atomic_write(target, data, temp_prefix=_TEMP_PREFIX, keep_open=True)
        except OSError as err:
            raise StoreError(f"cannot write {self.path}: {err.strerror or err}") from None
        self._install(snap, identity(os.fstat(fd)), fd)

    def make_dir(self) -> None:
        """Create the memory directory, 0700, if it is missing (an existing one is left as it is)."""
        try:
            ensure_private_dir(self.dir)
        except OSError as err:
            raise StoreError(f"cannot create {self.dir}: {err.strerror or err}") from None

    def _prepare_dir(self) -> None:
        """Make sure the directory exists and remove temp files left by a writer that was killed."""
        self.make_dir()
        try:
            with os.scandir(self.dir) as found:
                leftovers = [
                    item.path
                    for item in found
                    if item.name.startswith(_TEMP_PREFIX) and item.name.endswith(_TEMP_SUFFIX)
                ]
            for leftover in leftovers:
                unlink_quietly(leftover)  # we hold the lock: no live writer owns a temp file
        except OSError as err:
            raise StoreError(f"cannot list {self.dir}: {err.strerror or err}") from None
