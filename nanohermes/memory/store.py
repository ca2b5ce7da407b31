"""MemoryStore: memory.json on disk, read through a cache, written atomically under two locks.

- Reads take no lock: writers replace the file atomically, so a reader sees the old or the new file.
  The parsed entries, their token lists and the BM25 index are cached per file version.
- The cache key is (device, inode, mtime_ns, ctime_ns, size). Every write makes a new inode
  (`os.replace` of a fresh temp file), and on POSIX the cached snapshot keeps its file open, so its
  inode number cannot be reused while it is cached: two writes within one timestamp tick that leave
  the same size still differ in inode, and the cache can never serve stale entries.
- Every read-modify-write (remember, forget, moving a corrupt file aside) holds the in-process lock
  and the cross-process file lock (locking.py), re-reads the file under them, and writes through
  `nanohermes.fileio.atomic_write` (temp file 0600 in the same directory, fsync, `os.replace`, fsync
  the directory).
- A file that cannot be read or parsed is never overwritten: it is renamed to
  `memory.json.broken-<ts>` and `on_notice` gets one line saying so.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from nanohermes.errors import MemoryRejected, StoreError
from nanohermes.fileio import atomic_write, ensure_private_dir
from nanohermes.memory import bm25
from nanohermes.memory.block import render_block
from nanohermes.memory.constants import INJECT_TOP_K, MAX_ENTRIES, SHORT_MESSAGE_CHARS
from nanohermes.memory.entry import (
    FORMAT_VERSION,
    Entry,
    FormatError,
    derive_id,
    dump_lines,
    entry_line,
    parse_document,
)
from nanohermes.memory.fileio import free_name, read_all, unlink_quietly
from nanohermes.memory.kinds import Kind, unknown_kind_message
from nanohermes.memory.locking import lock_for
from nanohermes.memory.stats import MemoryStats, compute_stats
from nanohermes.memory.text import is_duplicate, normalize, tokenize
from nanohermes.memory.writing import prepare_keys, prepare_text

MEMORY_FILE = "memory.json"
MIN_ID_PREFIX = 4
_TEMP_PREFIX = ".memory.json."
_TEMP_SUFFIX = ".tmp"  # as nanohermes.fileio.atomic_write names its temp files
_HOLD_INODE = os.name == "posix"
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0)
_LABEL_TOKENS: dict[Kind, list[str]] = {
    kind: tokenize(kind.label("en")) + tokenize(kind.label("zh")) + [kind.value] for kind in Kind
}

Identity = tuple[int, int, int, int, int]


def _identity(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


def doc_tokens(entry: Entry) -> list[str]:
    """An entry's BM25 document: its text, its keys, its kind's labels (en + zh) and kind name."""
    tokens = tokenize(entry.text)
    for key in entry.keys:
        tokens.extend(tokenize(key))
    tokens.extend(_LABEL_TOKENS[entry.kind])
    return tokens


class _Snapshot:
    """One version of memory.json, parsed and tokenized; the BM25 index is built on first search."""

    def __init__(
        self, entries: Sequence[Entry], version: int, identity: Identity | None, docs: list[list[str]]
    ) -> None:
        self.entries = tuple(entries)
        self.version = version
        self.identity = identity
        self.docs = docs
        self.by_id = {entry.id: index for index, entry in enumerate(self.entries)}
        self.ts = [entry.ts for entry in self.entries]
        self._index: bm25.Bm25Index | None = None
        self._keys: list[str] | None = None
        self._guard = threading.Lock()

    @property
    def index(self) -> bm25.Bm25Index:
        if self._index is None:
            with self._guard:
                if self._index is None:
                    self._index = bm25.Bm25Index(self.docs)
        return self._index

    @property
    def normalized(self) -> list[str]:
        if self._keys is None:
            self._keys = [normalize(entry.text) for entry in self.entries]
        return self._keys

    def anchor(self, fd: int) -> None:
        """Keep `fd` (this version's file) open while the snapshot lives, so its inode is not reused."""
        weakref.finalize(self, os.close, fd)


class MemoryStore:
    """Long-term memory in `<dir>/memory.json`. Safe to share between threads and processes."""

    def __init__(
        self,
        dir: Path | str,
        *,
        on_notice: Callable[[str], None] | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        """`secrets`: texts never written to the file whatever their shape (the configured API key)."""
        self.dir = Path(dir).expanduser()
        self.secrets = tuple(secret for secret in secrets if secret)
        self.path = self.dir / MEMORY_FILE
        self._path = os.fspath(self.path)  # os.stat takes a str faster than a Path
        self._on_notice = on_notice
        self._lock = lock_for(self.path)
        self._snapshot: _Snapshot | None = None
        self._tokens: dict[Entry, list[str]] = {}
        self._lines: dict[Entry, str] = {}  # each entry's JSON line, reused by the next write

    # ----------------------------------------------------------------- reading

    def load(self) -> list[Entry]:
        """Every entry, in file order (oldest first unless refreshed)."""
        return list(self._current().entries)

    def get(self, entry_id: str) -> Entry | None:
        snap = self._current()
        index = snap.by_id.get(entry_id)
        return None if index is None else snap.entries[index]

    def matching_ids(self, wanted: str) -> list[str]:
        """`[wanted]` when it is an id; else the ids starting with it when it has at least
        MIN_ID_PREFIX characters (so `forget 3f9a` works), in file order; else []."""
        wanted = wanted.strip()
        snap = self._current()
        if wanted in snap.by_id:
            return [wanted]
        if len(wanted) < MIN_ID_PREFIX:
            return []
        return [entry.id for entry in snap.entries if entry.id.startswith(wanted)]

    def __len__(self) -> int:
        return len(self._current().entries)

    def search(self, query: str, top_k: int = INJECT_TOP_K) -> list[tuple[float, Entry]]:
        """The best `top_k` entries for `query` by BM25, best first; entries scoring 0 are left out."""
        snap = self._current()
        terms = bm25.query_terms(tokenize(query))
        if not terms or not snap.entries:
            return []
        ranked = snap.index.search(terms, top_k, snap.ts)
        return [(score, snap.entries[doc]) for score, doc in ranked]

    def explain(self, query: str, entry: Entry | str) -> bm25.Explanation:
        """Each query term's idf, tf and contribution to `entry`'s score."""
        snap = self._current()
        entry_id = entry if isinstance(entry, str) else entry.id
        doc = snap.by_id.get(entry_id)
        if doc is None:
            raise StoreError(f"no memory with id {entry_id!r}")
        return snap.index.explain(bm25.query_terms(tokenize(query)), doc)

    def retrieve_block(self, query: str, lang: str = "en") -> str:
        """The memory block for `query` ("" when nothing matches)."""
        return render_block([entry for _, entry in self.search(query)], lang)

    def block_for_turn(self, query: str, previous_block: str, lang: str = "en") -> str:
        """The block to inject this turn. A short message without hits ("continue") keeps the old one."""
        hits = self.search(query)
        if not hits and len("".join(query.split())) < SHORT_MESSAGE_CHARS:
            return previous_block
        return render_block([entry for _, entry in hits], lang)

    def stats(self) -> MemoryStats:
        return compute_stats(self.path, self.load(), MAX_ENTRIES)

    # ----------------------------------------------------------------- writing

    def remember(self, kind: Kind | str, text: str, source: str = "tool", keys: Iterable[str] = ()) -> bool:
        """Store one memory (SPEC §3.4). True if added, False if it duplicated an existing entry.

        Raises MemoryRejected (unknown kind, empty text, invisible Unicode, injection phrase) or
        StoreError (the file cannot be locked or written; the old file is then unchanged).
        """
        parsed = Kind.parse(kind)
        if parsed is None:
            raise MemoryRejected(unknown_kind_message(kind))
        clean = prepare_text(text, self.secrets, source=source)
        clean_keys = prepare_keys(keys, self.secrets)
        key = normalize(clean)
        if not key:
            raise MemoryRejected("text holds no words, only punctuation or spaces; nothing to remember")
        self._make_dir()  # before locking: the lock file lives in the directory
        with self._lock.hold():
            snap = self._current()
            self._check_writable(snap)
            entries = list(snap.entries)
            now = int(time.time())
            for index, (old, old_key) in enumerate(zip(entries, snap.normalized, strict=True)):
                if is_duplicate(clean, old.text, key, old_key):
                    entries[index] = _merge(old, parsed, clean, source, now, clean_keys, self.secrets)
                    self._write(entries)
                    return False
            new_id = derive_id(parsed, clean, snap.by_id)
            entries.append(Entry(new_id, parsed, clean, source, now, clean_keys))
            trim(entries)
            self._write(entries)
            return True

    def forget(self, entry_id: str) -> bool:
        """Delete the entry with this id. False if there is none."""
        if not self.path.exists():
            return False
        with self._lock.hold():
            snap = self._current()
            index = snap.by_id.get(entry_id.strip()) if isinstance(entry_id, str) else None
            if index is None:
                return False
            self._check_writable(snap)
            entries = list(snap.entries)
            del entries[index]
            self._write(entries)
            return True

    # ----------------------------------------------------------------- internals

    def _current(self) -> _Snapshot:
        try:
            st = os.stat(self._path)
        except FileNotFoundError:
            return self._empty()
        except OSError as err:
            return self._quarantine(f"cannot stat it: {err.strerror or err}")
        snap = self._snapshot
        if snap is not None and snap.identity == (
            st.st_dev,
            st.st_ino,
            st.st_mtime_ns,
            st.st_ctime_ns,
            st.st_size,
        ):  # _identity(st), inline: this runs on every search
            return snap
        return self._reload()

    def _empty(self) -> _Snapshot:
        snap = self._snapshot
        if snap is None or snap.identity is not None:
            snap = _Snapshot((), FORMAT_VERSION, None, [])
            self._snapshot = snap
        return snap

    def _reload(self) -> _Snapshot:
        try:
            fd = os.open(self.path, _READ_FLAGS)
        except FileNotFoundError:
            return self._empty()
        except OSError as err:
            return self._quarantine(f"cannot open it: {err.strerror or err}")
        try:
            return self._install_open(fd)
        except (OSError, FormatError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            return self._quarantine(reason)

    def _install_open(self, fd: int) -> _Snapshot:
        """Parse and install the file open at `fd`. On OSError or FormatError, `fd` is closed."""
        try:
            identity = _identity(os.fstat(fd))
            entries, version = parse_document(read_all(fd))
        except BaseException:
            os.close(fd)
            raise
        return self._install(entries, version, identity, fd)

    def _install(self, entries: Sequence[Entry], version: int, identity: Identity, fd: int) -> _Snapshot:
        cache = self._tokens
        tokens = {entry: cache.get(entry) or doc_tokens(entry) for entry in entries}
        self._tokens = tokens
        snap = _Snapshot(entries, version, identity, [tokens[entry] for entry in entries])
        if _HOLD_INODE:
            snap.anchor(fd)
        else:
            os.close(fd)
        self._snapshot = snap
        return snap

    def _quarantine(self, reason: str) -> _Snapshot:
        """Move an unreadable memory.json aside (never overwrite it), tell the user once, start empty."""
        with self._lock.hold():
            try:
                fd = os.open(self.path, _READ_FLAGS)
            except FileNotFoundError:
                return self._empty()
            except OSError:
                fd = -1
            if fd >= 0:  # another process may have repaired or replaced it meanwhile
                with contextlib.suppress(OSError, FormatError):
                    return self._install_open(fd)
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

    def _check_writable(self, snap: _Snapshot) -> None:
        if snap.version > FORMAT_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer nanohermes (format version {snap.version})",
                "upgrade nanohermes to change it",
            )

    def _write(self, entries: list[Entry]) -> None:
        """Replace memory.json atomically with `entries`; on failure the old file stays as it was."""
        self._prepare_dir()
        cache = self._lines
        lines = {entry: cache.get(entry) or entry_line(entry) for entry in entries}  # ids are unique
        data = dump_lines(list(lines.values()))
        try:
            fd = atomic_write(self.path, data, temp_prefix=_TEMP_PREFIX, keep_open=True)
        except OSError as err:
            raise StoreError(f"cannot write {self.path}: {err.strerror or err}") from None
        self._lines = lines
        self._install(entries, FORMAT_VERSION, _identity(os.fstat(fd)), fd)

    def _make_dir(self) -> None:
        """Create the memory directory, 0700, if it is missing (an existing one is left as it is)."""
        try:
            ensure_private_dir(self.dir)
        except OSError as err:
            raise StoreError(f"cannot create {self.dir}: {err.strerror or err}") from None

    def _prepare_dir(self) -> None:
        """Make sure the directory exists and remove temp files left by a writer that was killed."""
        self._make_dir()
        try:
            for leftover in self.dir.glob(f"{_TEMP_PREFIX}*{_TEMP_SUFFIX}"):
                unlink_quietly(str(leftover))  # we hold the lock: no live writer owns a temp file
        except OSError as err:
            raise StoreError(f"cannot list {self.dir}: {err.strerror or err}") from None


def _merge(
    old: Entry, kind: Kind, text: str, source: str, now: int, keys: tuple[str, ...], secrets: tuple[str, ...]
) -> Entry:
    """A duplicate refreshes ts and source, keeps the longer text and the more protected kind."""
    better_kind = kind if kind.eviction_rank < old.kind.eviction_rank else old.kind
    longer = text if len(text) > len(old.text) else old.text
    return Entry(old.id, better_kind, longer, source, now, prepare_keys(old.keys + keys, secrets))


def trim(entries: list[Entry], limit: int = MAX_ENTRIES) -> None:
    """While over `limit`: drop the entry of highest eviction rank, oldest ts, earliest in the list."""
    while len(entries) > limit:
        victim = max(range(len(entries)), key=lambda i: (entries[i].kind.eviction_rank, -entries[i].ts, -i))
        del entries[victim]
