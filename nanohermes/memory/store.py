"""MemoryStore: long-term memory (SPEC §3): search, remember, forget over memory.json.

The file, its cache and its atomic writes are memfile.py's; the BM25F index (index.py) and the
duplicate keys (duplicates.py) follow each snapshot by what changed; eviction is eviction.py's.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from nanohermes.core.errors import MemoryRejected, StoreError
from nanohermes.memory import coldcache
from nanohermes.memory.analysis import analyze, analyze_words
from nanohermes.memory.block import render_block
from nanohermes.memory.bm25 import Explanation, query_terms
from nanohermes.memory.coldsearch import MIN_STALE, ColdStart, with_words
from nanohermes.memory.constants import INJECT_TOP_K, MAX_ENTRIES, SHORT_MESSAGE_CHARS
from nanohermes.memory.docs import Doc
from nanohermes.memory.duplicates import KeyIndex, first_duplicate, merge
from nanohermes.memory.entry import Entry, derive_id
from nanohermes.memory.eviction import EvictionQueue, eviction_order, trim, trimmed
from nanohermes.memory.index import Index
from nanohermes.memory.kinds import Kind, unknown_kind_message
from nanohermes.memory.memfile import MEMORY_FILE, MemoryFile
from nanohermes.memory.scope import merged_project, sees, target_project
from nanohermes.memory.snapshot import Delta, Snapshot
from nanohermes.memory.stats import MemoryStats, compute_stats
from nanohermes.memory.text import normalize
from nanohermes.memory.writing import NewMemory, prepare_context, prepare_keys, prepare_text

__all__ = ["MEMORY_FILE", "MIN_ID_PREFIX", "MemoryStore", "NewMemory", "eviction_order", "trim"]

MIN_ID_PREFIX = 4


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
        self._on_notice = on_notice
        self._mutex = threading.RLock()  # guards the index, the keys and the derived-data caches
        self._file = MemoryFile(self.dir, self._mutex, self._follow, on_notice)
        self._lock = self._file.lock
        self._current = self._file.current
        self._index = Index()
        self._indexed: Snapshot | None = None  # the snapshot the index holds
        self._keys = KeyIndex()  # duplicate keys of every entry, built on the first write
        self._keys_at: Snapshot | None = None  # the snapshot they follow
        self._cold = ColdStart(self.dir)  # searches before the first full load (memory.cache)
        self._analysed_mark = 0
        self._evictions = EvictionQueue()  # the entries in eviction order, built at the cap
        self._evictions_at: Snapshot | None = None  # the snapshot it follows

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
        index = snap.position(entry_id)
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
        found = snap.position(wanted)
        project = self.project

        def shown(entry: Entry) -> bool:
            return everywhere or sees(project, entry)

        if found is not None and shown(snap.entries[found]):
            return [wanted]
        if len(wanted) < MIN_ID_PREFIX:
            return []
        found_ids = [entry.id for entry in snap.entries if entry.id.startswith(wanted) and shown(entry)]
        if not found_ids and wanted != wanted.lower():  # ids are lower-case hex: `5B7C` means `5b7c`
            return self.matching_ids(wanted.lower(), everywhere=everywhere)
        return found_ids

    def __len__(self) -> int:
        return len(self._current().entries)

    def search(self, query: str, top_k: int = INJECT_TOP_K) -> list[tuple[float, Entry]]:
        """The best `top_k` entries for `query` by BM25F, best first; entries scoring 0 are left out."""
        terms = query_terms(analyze(query, query=True))
        if not terms or top_k <= 0:
            return []
        with self._mutex:
            if self._indexed is None and self._file.snapshot is None:  # nothing loaded yet
                raw = self._file.peek()
                found = None if raw is None else self._cold.search(raw, terms, top_k, self.project)
                if found is not None:
                    return found.hits
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
            if self._indexed is None and self._file.snapshot is None:
                cold = self._cold.explained.get((tuple(words), entry_id))
                if cold is not None:  # a hit of a cold search: explained without a full load
                    return with_words(cold, words)
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
        Unicode, a control character, injection phrase) or StoreError (the file cannot be locked
        or written; the old file is then unchanged).
        """
        [outcome] = self.remember_many([NewMemory(kind, text, tuple(keys), context, scope)], source)
        if isinstance(outcome, MemoryRejected):
            raise outcome
        return outcome

    def remember_many(
        self, memories: Iterable[NewMemory], source: str = "user"
    ) -> list[bool | MemoryRejected]:
        """Store several memories as `remember` stores each (duplicates merge, also among them; the cap
        evicts), with one write of the file: an import of 5,000 costs one write, not 5,000. Per
        memory: True (added), False (merged) or the MemoryRejected that refused it. Raises
        StoreError when the file cannot be locked or written: then none of them is stored."""
        checked = [self._checked(memory, source) for memory in memories]
        refused = [item for item in checked if isinstance(item, MemoryRejected)]
        if len(refused) == len(checked):
            return list(refused)
        self._file.make_dir()  # before locking: the lock file lives in the directory
        outcomes: list[bool | MemoryRejected] = []
        with self._lock.hold():
            snap = self._current()
            self._file.check_writable(snap)
            try:
                for item in checked:
                    if isinstance(item, MemoryRejected):
                        outcomes.append(item)
                        continue
                    snap, added, last_id = self._with(snap, item)
                    outcomes.append(added)
                self._file.commit(snap)
            except BaseException:
                with self._mutex:  # they follow versions never written: rebuilt on their next use
                    self._keys_at = self._evictions_at = None
                raise
            self.last_id = last_id
        return outcomes

    def _checked(self, memory: NewMemory, source: str) -> Entry | MemoryRejected:
        try:
            return self._prepared(memory, source)
        except MemoryRejected as err:
            return err

    def _prepared(self, memory: NewMemory, source: str) -> Entry:
        """`memory` as an entry without an id: checked, redacted and cut (MemoryRejected if refused)."""
        kind = Kind.parse(memory.kind)
        if kind is None:
            raise MemoryRejected(unknown_kind_message(memory.kind))
        clean = prepare_text(memory.text, self.secrets, source=source)
        if not normalize(clean):
            raise MemoryRejected("text holds no words, only punctuation or spaces; nothing to remember")
        keys = prepare_keys(memory.keys, self.secrets)
        context = prepare_context(memory.context, self.secrets)
        project = target_project(memory.scope, kind, self.project)
        return Entry("", kind, clean, source, int(time.time()), keys, context, project)

    def _with(self, snap: Snapshot, new: Entry) -> tuple[Snapshot, bool, str]:
        """`snap` with `new` added (True) or merged into the entry it duplicates (False), and the id
        of the entry it added or merged into. The duplicate keys and the eviction queue follow the
        result at once (the next memory of a batch is checked against it); `snap` drops its own
        parent, so a batch holds no chain of older versions (a write's follow needs one step)."""
        key = normalize(new.text)
        index = self._duplicate(new.text, key, snap)
        if index is not None:
            old = snap.entries[index]
            merged = merge(old, new.kind, new.text, new.source, new.ts, new.keys, new.context, self.secrets)
            merged = dataclasses.replace(merged, project=merged_project(old, new.project, self.project))
            after = snap.replaced(index, self._doc(merged), self._line(merged))
            added, entry_id = False, merged.id
        else:
            entry = dataclasses.replace(new, id=derive_id(new.kind, new.text, snap.by_id))
            after = self._trimmed(snap.appended(self._doc(entry, key), self._line(entry)))
            added, entry_id = True, entry.id
        with self._mutex:
            self._follow_keys(after)
        snap.parent = None
        return after, added, entry_id

    def _trimmed(self, snap: Snapshot) -> Snapshot:
        """`snap` (an append's) within the cap: the excess evicted in eviction order (SPEC §3.4)."""
        parent = snap.parent
        if len(snap.entries) <= self.max_entries or parent is None:
            return trimmed(snap, self.max_entries)
        with self._mutex:
            if self._evictions_at is not parent:  # the first eviction, or the file changed elsewhere
                self._evictions.sync(parent)
                self._evictions_at = parent
            return trimmed(snap, self.max_entries, self._evictions)

    def forget(self, entry_id: str) -> bool:
        """Delete the entry with this id. False if there is none."""
        if not self.path.exists():
            return False
        with self._lock.hold():
            snap = self._current()
            index = snap.position(entry_id.strip()) if isinstance(entry_id, str) else None
            if index is None:
                return False
            self._file.check_writable(snap)
            self._file.commit(snap.without({index}))
            return True

    # ----------------------------------------------------------------- derived data

    def _doc(self, entry: Entry, key: str | None = None) -> Doc:
        with self._mutex:
            return self._file.derived.doc(entry, key)

    def _line(self, entry: Entry) -> bytes:
        with self._mutex:
            return self._file.derived.line(entry)

    def _duplicate(self, text: str, key: str, snap: Snapshot) -> int | None:
        """The position of the entry `text` (normalized: `key`) duplicates, or None (SPEC §3.4)."""
        with self._mutex:
            if self._keys_at is not snap:
                self._keys.sync(snap.docs)
                self._keys_at = snap
            found = self._keys.candidates(key)
        positions = (i for i in map(snap.position, found) if i is not None)
        return first_duplicate(text, key, positions, snap.docs, self.project)

    def _follow(self, snap: Snapshot) -> None:
        """An installed snapshot: our own write updates the keys and the index by what changed."""
        parent, delta = snap.parent, snap.delta
        if parent is None or delta is None:
            self._loaded(snap)
            return
        self._follow_keys(snap)
        if self._indexed is parent:
            self._synced(snap)

    def _follow_keys(self, snap: Snapshot) -> None:
        """The duplicate keys and the eviction queue, brought from `snap`'s parent to `snap` by its
        delta (those that followed the parent; call with the mutex held)."""
        parent, delta = snap.parent, snap.delta
        if parent is None or delta is None:
            return
        if self._keys_at is parent:
            self._keys.apply(*delta)
            self._keys_at = snap
        if self._evictions_at is parent:
            self._evictions.apply(*delta, snap)
            self._evictions_at = snap

    def _loaded(self, snap: Snapshot) -> None:
        """A full load: when it had to analyse many entries and the cache does not serve the file
        on its fast path, write memory.cache, so the next process's first search need not."""
        derived = self._file.derived
        analysed = derived.analysed - self._analysed_mark
        self._analysed_mark = derived.analysed
        if analysed >= MIN_STALE and snap.raw is not None and not self._cold.covers(snap.raw):
            lines = [derived.line(entry) for entry in snap.entries]
            coldcache.write(self.dir, lines, snap.docs, snap.raw)
        self._cold.forget()

    def _synced(self, snap: Snapshot) -> Index:
        """The index, brought to `snap` (call with the mutex held)."""
        if self._indexed is not snap:
            parent, delta = snap.parent, snap.delta
            if parent is not None and delta is not None and self._indexed is parent:
                in_order = self._apply_delta(snap, delta)
                if self._index.sparse or not in_order:
                    self._index.rebuild(self._scoped_docs(snap))
            else:
                self._index.sync(self._scoped_docs(snap))
            self._indexed = snap
            snap.parent = None  # what the index needed; do not keep the chain of old versions alive
        return self._index

    def _scoped_docs(self, snap: Snapshot) -> Sequence[Doc]:
        project = self.project
        return snap.docs if project is None else [d for d in snap.docs if sees(project, d.entry)]

    def _apply_delta(self, snap: Snapshot, delta: Delta) -> bool:
        """Apply a write's changes to the index of this store's scope; whether its slots are still
        in file order. A new slot goes after every other, which is the file's order for an appended
        entry but not for one this scope did not see before (another project's, made global)."""
        if self.project is None:
            self._index.apply(*delta)
            return True
        removed, changed = delta
        indexed = self._index.slot_of
        shown = tuple(doc for doc in changed if sees(self.project, doc.entry))
        hidden = tuple(doc.entry.id for doc in changed if not sees(self.project, doc.entry))
        new = [doc.entry.id for doc in shown if doc.entry.id not in indexed]
        self._index.apply(tuple(i for i in (*removed, *hidden) if i in indexed), shown)
        last = len(snap.entries) - len(new)
        return all((position := snap.position(i)) is not None and position >= last for i in new)
