"""One version of memory.json in memory: its entries, their documents and JSON lines, in file order.

A snapshot made by a write knows its parent and what changed (its delta), so the search index and
the duplicate keys follow it without looking at the other entries.
"""

from __future__ import annotations

import os
import weakref

from nanohermes.memory.docs import Doc
from nanohermes.memory.entry import FORMAT_VERSION, Entry, Kept
from nanohermes.memory.layout import BLOCK_LINES, appended_blocks, blocks_end, blocks_of

Identity = tuple[int, int, int, int, int]
"""(device, inode, mtime_ns, ctime_ns, size): the file version a snapshot was read from or written as."""
Delta = tuple[tuple[str, ...], tuple[Doc, ...]]
"""What a write changed: the ids it removed, the documents it added or replaced."""


def identity(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


class Snapshot:
    """`docs`, `entries` and (once a write needed them) `lines` are parallel lists in file order."""

    def __init__(
        self,
        docs: list[Doc],
        version: int = FORMAT_VERSION,
        *,
        lines: list[bytes] | None = None,
        parent: Snapshot | None = None,
        delta: Delta | None = None,
        entries: list[Entry] | None = None,
        kept: Kept | None = None,
        by_id: dict[str, int] | None = None,
        blocks: list[bytes] | None = None,
    ) -> None:
        self.docs = docs
        self.entries = [doc.entry for doc in docs] if entries is None else entries
        self.version = version
        self.identity: Identity | None = None
        self.lines = lines
        self.blocks = blocks if lines is not None else None  # the lines in blocks (layout.blocks_of)
        self.raw: bytes | None = None  # the file's bytes, when it was read line by line
        self.raw_end = 0  # where its entry lines end in `raw`
        self.kept: Kept = kept if kept is not None else (parent.kept if parent is not None else Kept())
        self.parent = parent
        self.delta = delta
        self._by_id = by_id

    @property
    def by_id(self) -> dict[str, int]:
        """Each entry's position by id (built on first use)."""
        found = self._by_id
        if found is None:
            found = self._by_id = {doc.entry.id: i for i, doc in enumerate(self.docs)}
        return found

    def position(self, entry_id: str) -> int | None:
        """The position of the entry with this id, or None."""
        found = self.by_id.get(entry_id)
        if found is None or found >= len(self.entries) or self.entries[found].id != entry_id:
            return None  # (an id a newer version added to the map this one handed over)
        return found

    def appended(self, doc: Doc, line: bytes) -> Snapshot:
        """This snapshot with `doc` appended (its line too), as a write makes it. The id map is
        handed over, not copied: this snapshot builds its own again if it is still asked."""
        by_id = self.by_id
        self._by_id = None
        by_id[doc.entry.id] = len(self.docs)
        blocks = None
        if self.blocks is not None and self.lines is not None:
            blocks = appended_blocks(self.blocks, len(self.lines), line)
        return Snapshot(
            [*self.docs, doc],
            lines=None if self.lines is None else [*self.lines, line],
            blocks=blocks,
            parent=self,
            delta=((), (doc,)),
            entries=[*self.entries, doc.entry],
            by_id=by_id,
        )

    def lines_end_in(self, raw: bytes) -> int | None:
        """Where this version's entry lines end in `raw` when `raw` begins exactly as this
        version's file did (another session appended to it), else None."""
        if self.kept.lines or self.version != FORMAT_VERSION:
            return None  # kept lines follow the entries: an append does not extend the bytes
        if self.raw is not None:
            prefix = memoryview(self.raw)[: self.raw_end]
            return self.raw_end if self.raw_end and raw.startswith(prefix) else None
        return None if self.blocks is None else blocks_end(raw, self.blocks)

    def grown(self, docs: list[Doc], lines: list[bytes]) -> Snapshot:
        """This snapshot with `docs` (their `lines`) appended, as another session's write made it."""
        by_id = self.by_id
        self._by_id = None  # handed over, as in `appended`
        for position, doc in enumerate(docs, start=len(self.docs)):
            by_id[doc.entry.id] = position
        blocks = self.blocks
        if blocks is not None and self.lines is not None:
            count = len(self.lines)
            for line in lines:
                blocks = appended_blocks(blocks, count, line)
                count += 1
        return Snapshot(
            [*self.docs, *docs],
            lines=None if self.lines is None else [*self.lines, *lines],
            parent=self,
            delta=((), tuple(docs)),
            entries=[*self.entries, *(doc.entry for doc in docs)],
            by_id=by_id,
            blocks=blocks,
        )

    def replaced(self, index: int, doc: Doc, line: bytes) -> Snapshot:
        """This snapshot with the entry at `index` replaced by `doc` (same id)."""
        docs = list(self.docs)
        docs[index] = doc
        entries = list(self.entries)
        entries[index] = doc.entry
        lines = blocks = None
        if self.lines is not None:
            lines = list(self.lines)
            lines[index] = line
            if self.blocks is not None:
                blocks = list(self.blocks)
                start = index - index % BLOCK_LINES
                blocks[index // BLOCK_LINES] = blocks_of(lines[start : start + BLOCK_LINES])[0]
        return Snapshot(
            docs,
            lines=lines,
            parent=self,
            delta=((), (doc,)),
            entries=entries,
            by_id=self._by_id,
            blocks=blocks,
        )

    def without(self, drop: set[int]) -> Snapshot:
        """This snapshot without the entries at positions `drop`. When this snapshot is a write's
        (it has a parent and a delta), the result replaces it: its parent is that parent and its
        delta both changes together."""
        docs = [doc for i, doc in enumerate(self.docs) if i not in drop]
        lines = None if self.lines is None else [line for i, line in enumerate(self.lines) if i not in drop]
        removed = tuple(self.docs[i].entry.id for i in drop)
        base = self.parent if self.parent is not None and self.delta is not None else self
        added = self.delta[1] if base is not self and self.delta is not None else ()
        kept = tuple(doc for doc in added if doc.entry.id not in removed)
        gone = tuple(i for i in removed if all(doc.entry.id != i for doc in added))
        blocks = None
        if self.blocks is not None and lines is not None and drop:
            same = min(drop) // BLOCK_LINES  # the blocks before the first dropped line stay
            blocks = self.blocks[:same] + blocks_of(lines[same * BLOCK_LINES :])
        return Snapshot(docs, lines=lines, parent=base, delta=(gone, kept), kept=self.kept, blocks=blocks)

    def anchor(self, fd: int) -> None:
        """Keep `fd` (this version's file) open while the snapshot lives, so its inode is not reused."""
        weakref.finalize(self, os.close, fd)
