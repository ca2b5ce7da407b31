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
import dataclasses
import heapq
import json
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from itertools import compress, repeat
from pathlib import Path

from nanohermes.errors import MemoryRejected, StoreError
from nanohermes.fileio import atomic_write, ensure_private_dir
from nanohermes.memory.analysis import analyze, analyze_words
from nanohermes.memory.block import render_block
from nanohermes.memory.bm25 import Explanation, query_terms
from nanohermes.memory.constants import INJECT_TOP_K, MAX_ENTRIES, SHORT_MESSAGE_CHARS
from nanohermes.memory.docs import Doc, make_doc
from nanohermes.memory.entry import (
    FORMAT_VERSION,
    Document,
    Entry,
    FormatError,
    Kept,
    Known,
    derive_id,
    dump_lines,
    entries_from_list,
    parse_document,
    split_lines,
)
from nanohermes.memory.fileio import (
    free_name,
    not_regular,
    read_all,
    special_kind,
    stat_memory_file,
    unlink_quietly,
    write_target,
)
from nanohermes.memory.index import Index
from nanohermes.memory.kinds import Kind, unknown_kind_message
from nanohermes.memory.locking import lock_for
from nanohermes.memory.scope import merged_project, sees, target_project
from nanohermes.memory.stats import MemoryStats, compute_stats
from nanohermes.memory.text import is_duplicate, normalize
from nanohermes.memory.writing import prepare_context, prepare_keys, prepare_text

MEMORY_FILE = "memory.json"
MIN_ID_PREFIX = 4
_TEMP_PREFIX = ".memory.json."
_TEMP_SUFFIX = ".tmp"  # as nanohermes.fileio.atomic_write names its temp files
_HOLD_INODE = os.name == "posix"
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)  # a FIFO never blocks

Identity = tuple[int, int, int, int, int]
Delta = tuple[tuple[str, ...], tuple[Doc, ...]]
"""What a write changed: the ids it removed, the documents it added or replaced."""


def _identity(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


class _Snapshot:
    """One version of memory.json: its entries, their documents (and, once a write needed them,
    their JSON lines), each list in file order. A snapshot made by a write knows its parent and
    what changed, so the index follows it without looking at the other entries."""

    def __init__(
        self,
        docs: list[Doc],
        version: int,
        by_id: dict[str, int] | None = None,
        lines: list[bytes] | None = None,
        parent: _Snapshot | None = None,
        delta: Delta | None = None,
        entries: list[Entry] | None = None,
        kept: Kept | None = None,
    ) -> None:
        self.docs = docs
        self.entries = [doc.entry for doc in docs] if entries is None else entries
        self.version = version
        self.identity: Identity | None = None
        self.by_id = {doc.entry.id: i for i, doc in enumerate(docs)} if by_id is None else by_id
        self.lines = lines
        self.kept: Kept = kept if kept is not None else (parent.kept if parent is not None else Kept())
        self.parent = parent
        self.delta = delta
        self._keys: list[str] | None = None

    @property
    def keys(self) -> list[str]:
        """Each entry's normalized text (the duplicate key)."""
        if self._keys is None:
            self._keys = [doc.key for doc in self.docs]
        return self._keys

    def appended(self, doc: Doc, line: bytes, extra: Delta) -> _Snapshot:
        """This snapshot with `doc` appended (its line too), as a write makes it."""
        by_id = dict(self.by_id)
        by_id[doc.entry.id] = len(self.docs)
        lines = None if self.lines is None else [*self.lines, line]
        entries = [*self.entries, doc.entry]
        snap = _Snapshot([*self.docs, doc], FORMAT_VERSION, by_id, lines, self, extra, entries)
        if self._keys is not None:
            snap._keys = [*self._keys, doc.key]
        return snap

    def replaced(self, index: int, doc: Doc, line: bytes) -> _Snapshot:
        docs = list(self.docs)
        docs[index] = doc
        lines = None if self.lines is None else list(self.lines)
        if lines is not None:
            lines[index] = line
        return _Snapshot(docs, FORMAT_VERSION, self.by_id, lines, self, ((), (doc,)))

    def anchor(self, fd: int) -> None:
        """Keep `fd` (this version's file) open while the snapshot lives, so its inode is not reused."""
        weakref.finalize(self, os.close, fd)


class MemoryStore:
    """Long-term memory in `<dir>/memory.json`. Safe to share between threads and processes.

    `max_entries` is the cap (setting `memory_max_entries`): beyond it the least protected, oldest
    entries are evicted (SPEC §3.4)."""

    def __init__(
        self,
        dir: Path | str,
        *,
        max_entries: int = MAX_ENTRIES,
        on_notice: Callable[[str], None] | None = None,
        secrets: Iterable[str] = (),
        project: str | None = None,
    ) -> None:
        """`secrets`: texts never written to the file whatever their shape (the configured API key).
        `project`: the project key (SPEC §3.9); search, injection and duplicates then see the global
        entries and this project's only. None: every entry."""
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise StoreError(f"memory_max_entries must be a positive integer, not {max_entries!r}")
        self.dir = Path(dir).expanduser()
        self.secrets = tuple(secret for secret in secrets if secret)
        self.path = self.dir / MEMORY_FILE
        self.max_entries = max_entries
        self.project = project
        self.last_id: str | None = None
        """The id of the entry the last `remember` of this store added or merged into."""
        self._path = os.fspath(self.path)  # os.stat takes a str faster than a Path
        self._on_notice = on_notice
        self._lock = lock_for(self.path)
        self._mutex = threading.RLock()  # guards the index and the derived-data caches
        self._snapshot: _Snapshot | None = None
        self._known: Known = {}  # stored dict → entry, by id: an unchanged dict is not parsed again
        self._docs: dict[str, Doc] = {}  # derived data by entry id
        self._lines: dict[str, tuple[Entry, bytes]] = {}  # each entry's JSON line, by id
        self._by_line: dict[bytes, Entry] = {}  # a line seen in the file (or written) → its entry
        self._index = Index()
        self._indexed: _Snapshot | None = None  # the snapshot the index holds

    def for_project(self, project: str | None) -> MemoryStore:
        """A store of the same file and settings that sees `project`'s entries and the global ones
        (every entry for None)."""
        return MemoryStore(
            self.dir,
            max_entries=self.max_entries,
            on_notice=self._on_notice,
            secrets=self.secrets,
            project=project,
        )

    # ----------------------------------------------------------------- reading

    def load(self) -> list[Entry]:
        """Every entry, in file order (oldest first unless refreshed)."""
        return list(self._current().entries)

    def get(self, entry_id: str) -> Entry | None:
        snap = self._current()
        index = snap.by_id.get(entry_id)
        return None if index is None else snap.entries[index]

    def visible(self) -> list[Entry]:
        """The entries this store sees (global + its project's; all without a project), in file order."""
        entries = self._current().entries
        return list(entries) if self.project is None else [e for e in entries if sees(self.project, e)]

    def matching_ids(self, wanted: str, *, everywhere: bool = False) -> list[str]:
        """`[wanted]` when it is an id; else the ids starting with it when it has at least
        MIN_ID_PREFIX characters (so `forget 3f9a` works), in file order; else []. Only the entries
        this store sees unless `everywhere`."""
        wanted = wanted.strip()
        snap = self._current()
        found = snap.by_id.get(wanted)
        project = self.project

        def shown(entry: Entry) -> bool:
            return everywhere or sees(project, entry)

        if found is not None and shown(snap.entries[found]):
            return [wanted]
        if len(wanted) < MIN_ID_PREFIX:
            return []
        return [entry.id for entry in snap.entries if entry.id.startswith(wanted) and shown(entry)]

    def __len__(self) -> int:
        return len(self._current().entries)

    def search(self, query: str, top_k: int = INJECT_TOP_K) -> list[tuple[float, Entry]]:
        """The best `top_k` entries for `query` by BM25F, best first; entries scoring 0 are left out."""
        terms = query_terms(analyze(query, query=True))
        if not terms or top_k <= 0:
            return []
        with self._mutex:
            index = self._synced(self._current())
            return [(score, doc.entry) for score, doc in index.search(terms, top_k)]

    def explain(self, query: str, entry: Entry | str) -> Explanation:
        """Each query term's idf, tf and contribution to `entry`'s score, with the words it came from."""
        entry_id = entry if isinstance(entry, str) else entry.id
        words: dict[str, list[str]] = {}
        for term, word in analyze_words(query, query=True):
            found = words.setdefault(term, [])
            if word not in found:
                found.append(word)
        with self._mutex:
            index = self._synced(self._current())
            if entry_id not in index.slot_of:
                raise StoreError(f"no memory with id {entry_id!r}")
            return index.explain(list(words), entry_id, words)

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
        return compute_stats(self.path, self.load(), self.max_entries)

    # ----------------------------------------------------------------- writing

    def remember(
        self,
        kind: Kind | str,
        text: str,
        source: str = "tool",
        keys: Iterable[str] = (),
        context: str = "",
        scope: str | None = None,
    ) -> bool:
        """Store one memory (SPEC §3.4). True if added, False if it duplicated an existing entry.

        `scope` (SPEC §3.9): "global", "project" (this store's project; global in a store opened
        without one) or None: facts and lessons belong to the project, the other kinds are global.
        Duplicates are looked for among the entries this store sees first, then in other projects:
        a project memory re-learnt in another project becomes global.

        `context` (the conversation around it) is redacted, cut to MAX_CONTEXT and indexed with a
        low weight; it is never shown. Raises MemoryRejected (unknown kind, empty text, invisible
        Unicode, injection phrase) or StoreError (the file cannot be locked or written; the old
        file is then unchanged).
        """
        parsed = Kind.parse(kind)
        if parsed is None:
            raise MemoryRejected(unknown_kind_message(kind))
        clean = prepare_text(text, self.secrets, source=source)
        clean_keys = prepare_keys(keys, self.secrets)
        clean_context = prepare_context(context, self.secrets)
        project = target_project(scope, parsed, self.project)
        key = normalize(clean)
        if not key:
            raise MemoryRejected("text holds no words, only punctuation or spaces; nothing to remember")
        self._make_dir()  # before locking: the lock file lives in the directory
        with self._lock.hold():
            snap = self._current()
            self._check_writable(snap)
            now = int(time.time())
            index = find_duplicate(clean, key, snap.entries, snap.keys, self.project)
            if index is not None:
                old = snap.entries[index]
                merged = _merge(old, parsed, clean, source, now, clean_keys, clean_context, self.secrets)
                merged = dataclasses.replace(merged, project=merged_project(old, project, self.project))
                self._commit(snap.replaced(index, self._doc(merged), self._line(merged)))
                self.last_id = merged.id
                return False
            entry = Entry(
                derive_id(parsed, clean, snap.by_id),
                parsed,
                clean,
                source,
                now,
                clean_keys,
                clean_context,
                project,
            )
            doc = self._doc(entry, key)
            grown = snap.appended(doc, self._line(entry), ((), (doc,)))
            self._commit(self._trimmed(grown))
            self.last_id = entry.id
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
            self._commit(self._without(snap, {index}))
            return True

    # ----------------------------------------------------------------- derived data

    def _doc(self, entry: Entry, key: str | None = None) -> Doc:
        """The entry's document, reused by id when its text, kind, keys and context are unchanged."""
        with self._mutex:
            cached = self._docs.get(entry.id)
            if cached is not None and cached.same_source(entry):
                doc = (
                    cached
                    if cached.entry is entry
                    else Doc(entry, cached.tf, cached.main_len, cached.context_len, cached.key)
                )
            else:
                doc = make_doc(entry, key)
            self._docs[entry.id] = doc
            return doc

    def _line(self, entry: Entry) -> bytes:
        cached = self._lines.get(entry.id)
        if cached is not None and cached[0] is entry:
            return cached[1]
        data = entry.to_dict()
        line = json.dumps(data, ensure_ascii=False).encode()
        with self._mutex:
            self._lines[entry.id] = (entry, line)
            self._by_line[line] = entry
            self._known[entry.id] = (data, entry)  # json.loads of the line gives back an equal dict
        return line

    def _parse(self, raw: bytes) -> Document:
        """The file's entries: line by line, reusing the entry of every line seen before, when
        the file is laid out as this program writes it; else the whole document (call with the
        mutex held)."""
        lines = split_lines(raw)
        if lines is None:
            return parse_document(raw, self._known)
        seen, known = self._by_line, self._known
        entries: list[Entry] = []
        taken: set[str] = set()
        for line in lines:
            entry = seen.get(line)
            if entry is None:
                try:
                    item = json.loads(line)
                except (UnicodeDecodeError, ValueError, RecursionError):
                    return parse_document(raw, known)  # says what is wrong with it
                found = entries_from_list([item], known)
                if not found or found[0].id != item.get("id"):
                    return parse_document(raw, known)  # dropped or id derived: let the full parse decide
                entry = seen[line] = found[0]
                self._lines[entry.id] = (entry, line)  # written back as it was read
            if entry.id in taken:
                return parse_document(raw, known)
            taken.add(entry.id)
            entries.append(entry)
        return Document(entries, FORMAT_VERSION, Kept())

    def _synced(self, snap: _Snapshot) -> Index:
        """The index, brought to `snap` (call with the mutex held)."""
        if self._indexed is not snap:
            parent, delta = snap.parent, snap.delta
            if parent is not None and delta is not None and self._indexed is parent:
                self._index.apply(*self._scoped_delta(delta))
                if self._index.sparse:
                    project = self.project
                    docs = snap.docs if project is None else [d for d in snap.docs if sees(project, d.entry)]
                    self._index.rebuild(docs)
            else:
                project = self.project
                docs = snap.docs if project is None else [d for d in snap.docs if sees(project, d.entry)]
                self._index.sync(docs)
            self._indexed = snap
            snap.parent = None  # what the index needed; do not keep the chain of old versions alive
        return self._index

    def _scoped_delta(self, delta: Delta) -> Delta:
        """The part of a write's changes the index of this store's scope sees."""
        if self.project is None:
            return delta
        removed, changed = delta
        indexed = self._index.slot_of
        shown = tuple(doc for doc in changed if sees(self.project, doc.entry))
        hidden = tuple(doc.entry.id for doc in changed if not sees(self.project, doc.entry))
        gone = tuple(i for i in (*removed, *hidden) if i in indexed)
        return gone, shown

    def _trimmed(self, snap: _Snapshot) -> _Snapshot:
        excess = len(snap.entries) - self.max_entries
        return snap if excess <= 0 else self._without(snap, set(eviction_order(snap.entries, excess)))

    def _without(self, snap: _Snapshot, drop: set[int]) -> _Snapshot:
        docs = [doc for i, doc in enumerate(snap.docs) if i not in drop]
        lines = None if snap.lines is None else [line for i, line in enumerate(snap.lines) if i not in drop]
        removed = tuple(snap.docs[i].entry.id for i in drop)
        base = snap.parent if snap.parent is not None and snap.delta is not None else snap
        added = snap.delta[1] if base is not snap and snap.delta is not None else ()
        kept = tuple(doc for doc in added if doc.entry.id not in removed)
        gone = tuple(i for i in removed if all(doc.entry.id != i for doc in added))
        return _Snapshot(docs, FORMAT_VERSION, None, lines, base, (gone, kept))

    # ----------------------------------------------------------------- internals

    def _current(self) -> _Snapshot:
        try:
            st = stat_memory_file(self._path)  # StoreError for a symlink loop or a special file
        except OSError as err:
            return self._quarantine(f"cannot stat it: {err.strerror or err}")
        if st is None:
            return self._empty()
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
            snap = _Snapshot([], FORMAT_VERSION, {}, [])
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
            st = os.fstat(fd)
            what = special_kind(st.st_mode)
            if what is not None:  # replaced by a special file since the stat: never read it
                raise not_regular(self.path, what)
            identity = _identity(st)
            with self._mutex:
                document = self._parse(read_all(fd))
                entries = document.entries
                docs = [self._doc(entry) for entry in entries]
                self._forget_stale(entries)
        except BaseException:
            os.close(fd)
            raise
        snap = _Snapshot(docs, document.version, entries=entries, kept=document.kept)
        return self._install(snap, identity, fd)

    def _forget_stale(self, entries: list[Entry]) -> None:
        """Drop cached derived data of entries gone from the file, once it outweighs the live data."""
        bound = 2 * len(entries) + 64
        if max(len(self._docs), len(self._known), len(self._lines), len(self._by_line)) > bound:
            snap_ids = {entry.id for entry in entries}
            self._docs = {i: d for i, d in self._docs.items() if i in snap_ids}
            self._known = {i: k for i, k in self._known.items() if i in snap_ids}
            self._lines = {i: line for i, line in self._lines.items() if i in snap_ids}
            self._by_line = {line: entry for entry, line in self._lines.values()}

    def _install(self, snap: _Snapshot, identity: Identity, fd: int) -> _Snapshot:
        snap.identity = identity
        if _HOLD_INODE:
            snap.anchor(fd)
        else:
            os.close(fd)
        with self._mutex:
            if snap.parent is not None and self._indexed is snap.parent:
                self._synced(snap)  # our own write: update the index by what changed
            snap.parent = None
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

    def _check_writable(self, snap: _Snapshot) -> None:
        if snap.version > FORMAT_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer nanohermes (format version {snap.version})",
                "upgrade nanohermes to change it",
            )

    def _commit(self, snap: _Snapshot) -> None:
        """Replace memory.json atomically with `snap`'s entries; on failure the old file stays."""
        self._prepare_dir()
        if snap.lines is None:
            snap.lines = [self._line(entry) for entry in snap.entries]
        data = dump_lines(snap.lines, snap.kept)
        try:
            target = write_target(self.path)  # through a symlink: the link stays, its target changes
            fd = atomic_write(target, data, temp_prefix=_TEMP_PREFIX, keep_open=True)
        except OSError as err:
            raise StoreError(f"cannot write {self.path}: {err.strerror or err}") from None
        self._install(snap, _identity(os.fstat(fd)), fd)

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
    old: Entry,
    kind: Kind,
    text: str,
    source: str,
    now: int,
    keys: tuple[str, ...],
    context: str,
    secrets: tuple[str, ...],
) -> Entry:
    """A duplicate refreshes ts and source, keeps the longer text, the more protected kind, both
    texts' keys, and the newer context (the older one when the new memory has none)."""
    better_kind = kind if kind.eviction_rank < old.kind.eviction_rank else old.kind
    longer = text if len(text) > len(old.text) else old.text
    return dataclasses.replace(
        old,
        kind=better_kind,
        text=longer,
        source=source,
        ts=now,
        keys=prepare_keys(old.keys + keys, secrets),
        context=context or old.context,
    )  # the old entry's project and unknown fields stay


def eviction_order(entries: Sequence[Entry], count: int) -> list[int]:
    """The positions of the `count` entries to evict first: highest eviction rank, then oldest ts,
    then earliest in the list. O(N log count)."""
    return heapq.nsmallest(
        count, range(len(entries)), key=lambda i: (-entries[i].kind.eviction_rank, entries[i].ts, i)
    )


def trim(entries: list[Entry], limit: int = MAX_ENTRIES) -> None:
    """Evict from `entries` (in place) until at most `limit` remain, in eviction order."""
    excess = len(entries) - limit
    if excess > 0:
        drop = set(eviction_order(entries, excess))
        entries[:] = [entry for i, entry in enumerate(entries) if i not in drop]


def find_duplicate(
    text: str, key: str, entries: Sequence[Entry], keys: Sequence[str], project: str | None = None
) -> int | None:
    """The position of the first entry `text` (normalized: `key`) duplicates (SPEC §3.4), or None:
    the first one a store opened for `project` sees, else the first of another project.

    Only entries whose key contains `key` or is contained in it can be duplicates; both tests run
    over all keys at C speed, and only those candidates get the full test."""
    positions = range(len(keys))
    inside = compress(positions, map(str.__contains__, keys, repeat(key)))  # key in theirs
    around = compress(positions, map(key.__contains__, keys))  # theirs in key
    elsewhere: int | None = None
    for i in sorted({*inside, *around}):
        if is_duplicate(text, entries[i].text, key, keys[i]):
            if sees(project, entries[i]):
                return i
            if elsewhere is None:
                elsewhere = i
    return elsewhere
