"""MemoryStore (SPEC §3): search, remember, forget over memory.json. Reads use the state held in
memory while the file is unchanged; a file changed by anyone else is read again whole."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from nanohermes.core.errors import MemoryRejected, StoreError
from nanohermes.core.events import RecalledMemory
from nanohermes.core.types import shorten
from nanohermes.memory.block import Recall, block_lines, render_block
from nanohermes.memory.constants import INJECT_TOP_K, MAX_ENTRIES, SHORT_MESSAGE_CHARS
from nanohermes.memory.entry import Entry, derive_id
from nanohermes.memory.index import Doc, Explanation, make_doc
from nanohermes.memory.kinds import Kind
from nanohermes.memory.memfile import MEMORY_FILE, FormatError, Identity, MemoryFile, Parsed, parse
from nanohermes.memory.state import State
from nanohermes.memory.text import analyze, analyze_words
from nanohermes.memory.writing import NewMemory, merge, prepare, sees

__all__ = ["MEMORY_FILE", "MIN_ID_PREFIX", "MemoryStats", "MemoryStore", "NewMemory", "recall_for_turn"]

MIN_ID_PREFIX = 4


@dataclass(frozen=True)
class MemoryStats:
    """Figures for `nanohermes memory stats`."""

    path: Path
    exists: bool
    size_bytes: int
    total: int
    max_entries: int
    per_kind: dict[Kind, int]
    per_source: dict[str, int]
    oldest_ts: int | None
    newest_ts: int | None


class MemoryStore:
    """Long-term memory in `<dir>/memory.json`, safe to share between threads and processes. `team`:
    the repository's team memory (given the distilled project memories when `team_distill`);
    `history`: search and `visible` include replaced entries."""

    def __init__(
        self,
        dir: Path | str,
        *,
        max_entries: int = MAX_ENTRIES,
        on_notice: Callable[[str], None] | None = None,
        secrets: Iterable[str] = (),
        project: str | None = None,
        team: MemoryStore | None = None,
        team_distill: bool = False,
        history: bool = False,
    ) -> None:
        """`secrets`: texts never written whatever their shape; `project`: None sees every entry."""
        if max_entries < 1:
            raise StoreError(f"memory_max_entries must be a positive integer, not {max_entries!r}")
        self.dir = Path(dir).expanduser()
        self.path = self.dir / MEMORY_FILE
        self.max_entries = max_entries
        self.secrets = tuple(secret for secret in secrets if secret)
        self.project, self.team, self.team_distill, self.history = project, team, team_distill, history
        self.last_id: str | None = None  # the entry the last `remember` added or merged into
        self._on_notice = on_notice or (lambda notice: None)
        self._file = MemoryFile(self.dir)
        self._mutex = threading.RLock()  # guards everything below
        self._state: State | None = None
        self._used: dict[str, tuple[int, int]] = {}  # id → (uses, last use) not yet written
        self._docs = functools.lru_cache(2 * max_entries + 1024)(make_doc)  # kept across reloads

    def for_project(self, project: str | None, *, history: bool = False) -> MemoryStore:
        """A store of the same file and settings that sees `project`'s entries and the global ones."""
        return MemoryStore(
            self.dir,
            max_entries=self.max_entries,
            on_notice=self._on_notice,
            secrets=self.secrets,
            project=project,
            team=self.team,
            team_distill=self.team_distill,
            history=history,
        )

    def _sees(self, entry: Entry) -> bool:
        return sees(self.project, entry) and (self.history or not entry.superseded_by)

    def load(self) -> list[Entry]:
        """Every entry, in file order (oldest first unless refreshed)."""
        with self._mutex:
            return list(self._current().entries.values())

    def get(self, entry_id: str) -> Entry | None:
        with self._mutex:
            return self._current().get(entry_id)

    def visible(self) -> list[Entry]:
        """The entries this store sees (global + its project's; live only unless `history`)."""
        return [entry for entry in self.load() if self._sees(entry)]

    def __len__(self) -> int:
        return len(self.load())

    def matching_ids(self, wanted: str, *, everywhere: bool = False) -> list[str]:
        """`[wanted]` when it is an id, else the ids it is a prefix of (`forget 3f9a`), if long enough."""
        wanted = wanted.strip()
        shown = [e.id for e in self.load() if everywhere or sees(self.project, e)]
        if wanted in shown or len(wanted) < MIN_ID_PREFIX:
            return [wanted] if wanted in shown else []
        found = [entry_id for entry_id in shown if entry_id.startswith(wanted)]
        # ids are lower-case hex: `5B7C` means `5b7c`
        return found or [entry_id for entry_id in shown if entry_id.startswith(wanted.lower())]

    def search(self, query: str, top_k: int = INJECT_TOP_K) -> list[tuple[float, Entry]]:
        """The best `top_k` entries for `query` by BM25F, best first; entries scoring 0 are left out."""
        terms = list(dict.fromkeys(analyze(query, query=True)))
        if not terms or top_k <= 0:
            return []
        with self._mutex:
            return self._searched().index().search(terms, top_k)

    def explain(self, query: str, entry: Entry | str) -> Explanation:
        """Each query term's idf, tf and contribution to `entry`'s score, with the words it came from."""
        entry_id = entry if isinstance(entry, str) else entry.id
        words: dict[str, list[str]] = {}
        for term, word in analyze_words(query, query=True):
            words.setdefault(term, []).append(word)
        with self._mutex:
            state = self._searched()
            order = state.order_of.get(entry_id, state.team_order.get(entry_id))
            index = state.index()
            if order not in index.docs:
                raise StoreError(f"no memory with id {entry_id!r}")
            return index.explain(order, words)

    def retrieve_block(self, query: str, lang: str = "en") -> str:
        """The memory block for `query` ("" when nothing matches); its memories count as used."""
        return recall_for_turn(self, query, "", lang).block

    def stats(self) -> MemoryStats:
        entries = self.load()
        try:
            size, exists = self.path.stat().st_size, True
        except OSError:
            size, exists = 0, False
        kinds = Counter(entry.kind for entry in entries)
        sources = Counter(entry.source or "(none)" for entry in entries)
        stamps = [entry.ts for entry in entries if entry.ts > 0]
        return MemoryStats(
            self.path,
            exists,
            size,
            len(entries),
            self.max_entries,
            {kind: kinds[kind] for kind in Kind},
            dict(sources.most_common()),
            min(stamps, default=None),
            max(stamps, default=None),
        )

    def note_used(self, ids: Iterable[str]) -> None:
        """Count a use of each memory, written with the next write or by `flush`, never on its own."""
        now = int(time.time())
        with self._mutex:
            for entry_id in ids:
                self._used[entry_id] = (self._used.get(entry_id, (0, 0))[0] + 1, now)

    def flush(self) -> None:
        """Write the uses noted since the last write (at the end of a session); best effort."""
        with self._mutex:
            if self._used:
                with contextlib.suppress(StoreError), self._writing():
                    pass

    def _searched(self) -> State:
        """The current state, with the team memory's current entries to search (mutex held)."""
        state = self._current()
        if self.team is not None:
            with self.team._mutex:
                team = self.team._current()
                if state.team_identity != team.identity:
                    state.set_team(list(team.entries.values()), team.identity)
        return state

    def _current(self) -> State:
        """The entries of the file as it is now (call with the mutex held)."""
        try:
            if self._state is not None and self._state.identity == self._file.version():
                return self._state
            return self._read()
        except (OSError, FormatError) as err:
            return self._quarantine(err.strerror if isinstance(err, OSError) and err.strerror else str(err))

    def _read(self) -> State:
        found = self._file.read()
        return self._fresh() if found is None else self._fresh(parse(found[1]), found[0])

    def _fresh(self, parsed: Parsed | None = None, version: Identity | None = None) -> State:
        """This store's state of the file read as `parsed`, version `version` (None: no file)."""

        def doc(entry: Entry) -> Doc:
            return self._docs(entry.kind, entry.text, entry.keys, entry.context)

        self._state = State(self._sees, doc, parsed, version, self._adopt)
        return self._state

    def _adopt(self, entry: Entry) -> Entry | str:
        """An entry as read from the file (the team store checks it)."""
        return entry

    def _quarantine(self, reason: str) -> State:
        """Move an unreadable memory.json aside (never overwrite it), tell the user once, start empty."""
        with self._locked():
            with contextlib.suppress(OSError, FormatError):  # repaired or replaced meanwhile?
                return self._read()
            try:
                broken = self._file.move_aside()
            except OSError as err:
                raise StoreError(
                    f"{self.path} is unreadable ({reason}) and could not be moved aside: "
                    f"{err.strerror or err}",
                    "move or repair the file by hand",
                ) from None
        why = shorten(reason, 80)  # the parser's detail is long; where the file went must stay on the line
        self._on_notice(
            f"memory.json was unreadable ({why}), moved to {broken}; starting with an empty memory"
        )
        return self._fresh()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """This store's in-process lock, then the cross-process lock of the file."""
        with self._mutex, self._file.acquire():
            yield

    def remember(
        self,
        kind: Kind | str,
        text: str,
        source: str = "tool",
        keys: Iterable[str] = (),
        context: str = "",
        scope: str | None = None,
        replaces: str = "",
    ) -> bool:
        """Store one memory (SPEC §3.4): True if added, False if merged into its duplicate; `scope`:
        "global", "project" or None (the kind's default). Raises MemoryRejected or StoreError."""
        memory = NewMemory(kind, text, tuple(keys), context, scope, replaces)
        [outcome] = self.remember_many([memory], source)
        if isinstance(outcome, MemoryRejected):
            raise outcome
        return outcome

    def remember_many(
        self, memories: Iterable[NewMemory], source: str = "user"
    ) -> list[bool | MemoryRejected]:
        """Store several memories as `remember` does, with one write of the file; per memory True, False
        or the MemoryRejected that refused it. StoreError: none of them is stored."""
        memories = list(memories)
        checked = [self._checked(memory, source) for memory in memories]
        if all(isinstance(item, MemoryRejected) for item in checked):
            return [item for item in checked if isinstance(item, MemoryRejected)]
        with self._writing() as state:
            outcomes = [
                self._put(state, item, new.replaces) if isinstance(item, Entry) else item
                for new, item in zip(memories, checked, strict=True)
            ]
            state.evict(self.max_entries)
            return outcomes

    def forget(self, entry_id: str) -> bool:
        """Delete the entry with this id. False if there is none."""
        if not self.path.exists():
            return False
        with self._locked():
            order = self._current().order_of.get(entry_id.strip())
            if order is None:
                return False
            with self._writing() as state:
                state.remove(order)
        return True

    @contextlib.contextmanager
    def _writing(self) -> Iterator[State]:
        """The state under both locks, with the uses noted, to change; written unless an exception."""
        with self._locked():
            state = self._current()
            if state.problem:
                raise StoreError(f"{self.path} {state.problem}", "it is left as it is")
            try:
                state.add_uses(self._used)
                yield state
                state.identity = self._file.write(state.dump(), state.version)
                self._used.clear()
            except BaseException:
                self._state = None
                raise

    def _checked(self, memory: NewMemory, source: str) -> Entry | MemoryRejected:
        try:
            return prepare(memory, source, self.secrets, self.project)
        except MemoryRejected as err:
            return err

    def _put(self, state: State, new: Entry, replaces: str = "") -> bool | MemoryRejected:
        """Add `new` or merge it into its duplicate (`last_id`), mark what it replaces; added?"""
        at = state.order_of.get(replaces)
        old = state.get(replaces)
        if replaces and (old is None or not sees(self.project, old)):
            return MemoryRejected(f"no memory with id {replaces!r} to replace; nothing changed")
        if old is not None and old.superseded_by:
            return MemoryRejected(f"memory {replaces} was already replaced by {old.superseded_by}")
        if old is not None:  # the replacement takes its place: the same scope
            new = dataclasses.replace(new, project=old.project)
        found = state.duplicate(new.text, skip=at)
        if found is not None:
            entry = merge(state.entries[found], new, self.project, self.secrets)
        else:
            entry = dataclasses.replace(new, id=derive_id(new.kind, new.text, state.order_of))
        state.put(entry, found)
        if old is not None:
            state.put(dataclasses.replace(old, superseded_by=entry.id, superseded_ts=new.ts), at)
        self.last_id = entry.id
        return found is None


def recall_for_turn(store: MemoryStore, query: str, previous_block: str, lang: str = "en") -> Recall:
    """The block to inject for `query` and the memories it holds (SPEC §3.6), which count as used."""
    hits = store.search(query)
    if not hits and len("".join(query.split())) < SHORT_MESSAGE_CHARS:
        return Recall(previous_block, kept=True)
    entries = [entry for _, entry in hits]
    memories = []
    for score, entry in hits[: len(block_lines(entries, lang))]:
        try:  # the query terms it matched, as `explain` shows them (`makefil ← makefiles`)
            terms = tuple(part.display for part in store.explain(query, entry.id).terms)
        except StoreError:  # forgotten by another process a moment ago: it was still recalled
            terms = ()
        scope = "team" if entry.team else "project" if entry.project else "global"
        memories.append(RecalledMemory(entry.id, entry.kind.value, entry.text, score, terms, scope))
    store.note_used(memory.id for memory in memories if memory.scope != "team")  # (never written)
    return Recall(render_block(entries, lang), tuple(memories))
