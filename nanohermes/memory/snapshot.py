"""One version of memory.json in memory: its entries, their documents and JSON lines, in file order.

A snapshot made by a write knows its parent and what changed (its delta), so the search index and
the duplicate keys follow it without looking at the other entries. Its lists are immutable `Chunked`
sequences of BLOCK_LINES items a chunk: a write copies the chunks it changes, not the whole lists,
and joins the lines of the chunk it changes into that chunk's block of the file, not every line.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import weakref
from collections.abc import Sequence
from typing import TypeVar

from nanohermes.memory.chunked import Chunked
from nanohermes.memory.docs import Doc
from nanohermes.memory.entry import FORMAT_VERSION, Entry, Kept
from nanohermes.memory.layout import BLOCK_LINES, blocks_end, join_lines

T = TypeVar("T")

Identity = tuple[int, int, int, int, int]
"""(device, inode, mtime_ns, ctime_ns, size): the file version a snapshot was read from or written as."""
Delta = tuple[tuple[str, ...], tuple[Doc, ...]]
"""What a write changed: the ids it removed, the documents it added or replaced."""


def identity(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


class Snapshot:
    """`docs`, `entries`, `orders` and (once a write needed them) `lines` are parallel sequences in
    file order. `orders` numbers the entries in file order (increasing, never renumbered: a removal
    leaves a gap, an append takes the next number), so the map from id to order (`by_id`) stays
    true across writes and is handed from version to version, not rebuilt."""

    def __init__(
        self,
        docs: Sequence[Doc],
        version: int = FORMAT_VERSION,
        *,
        lines: Sequence[bytes] | None = None,
        parent: Snapshot | None = None,
        delta: Delta | None = None,
        entries: Sequence[Entry] | None = None,
        kept: Kept | None = None,
        by_id: dict[str, int] | None = None,
        orders: Chunked[int] | None = None,
    ) -> None:
        self.docs: Chunked[Doc] = _chunked(docs)
        self.orders: Chunked[int] = _chunked(range(len(self.docs))) if orders is None else orders
        if entries is None:
            size = self.docs.size
            entries = Chunked([tuple(doc.entry for doc in chunk) for chunk in self.docs.chunks], size)
        self.entries: Chunked[Entry] = _chunked(entries)
        self.version = version
        self.identity: Identity | None = None
        self.lines: Chunked[bytes] | None = None if lines is None else _chunked(lines)
        self._blocks: list[bytes] | None = None
        # id(chunk) → (chunk, its block): the parent's, for the chunks this version shares with it
        self._joined: dict[int, tuple[tuple[bytes, ...], bytes]] = {} if parent is None else parent._joined
        self.raw: bytes | None = None  # the file's bytes, when it was read line by line
        self.raw_end = 0  # where its entry lines end in `raw`
        self.kept: Kept = kept if kept is not None else (parent.kept if parent is not None else Kept())
        self.parent = parent
        self.delta = delta
        self._by_id = by_id

    @property
    def by_id(self) -> dict[str, int]:
        """Each entry's order by id (built on first use)."""
        found = self._by_id
        if found is None:
            pairs = zip(self.entries, self.orders, strict=True)
            found = self._by_id = {entry.id: order for entry, order in pairs}
        return found

    def _handed_over(self) -> dict[str, int]:
        """The id map, for a version made from this one to change: this one builds its own again
        if it is still asked."""
        by_id = self.by_id
        self._by_id = None
        return by_id

    def position(self, entry_id: str) -> int | None:
        """The position of the entry with this id, or None."""
        order = self.by_id.get(entry_id)
        found = None if order is None else self.orders.find_sorted(order)
        if found is None or self.entries[found].id != entry_id:
            return None  # (an id another version added to or removed from the map it handed over)
        return found

    def order_of(self, entry_id: str) -> int | None:
        """The entry's order (see the class docstring), or None."""
        return self.by_id.get(entry_id)

    def _next_orders(self, count: int) -> range:
        start = self.orders.last + 1 if len(self.orders) else 0
        return range(start, start + count)

    def fill_lines(self, lines: Sequence[bytes]) -> None:
        """Set the entries' JSON lines (a write needs them; a snapshot read from a file may lack them)."""
        self.lines = _chunked(lines)
        self._blocks = None

    @property
    def blocks(self) -> list[bytes] | None:
        """The entry lines as blocks to write (layout.dump_blocks): every chunk but the last joined,
        the last chunk's lines one by one (appends add to it: joining it would copy it on every
        write). Chunks shared with the parent keep the block joined for it. None without lines."""
        lines = self.lines
        if lines is None:
            return None
        if self._blocks is None:
            known = self._joined
            joined: dict[int, tuple[tuple[bytes, ...], bytes]] = {}
            blocks: list[bytes] = []
            chunks = lines.chunks
            for chunk in chunks[:-1]:
                hit = known.get(id(chunk))
                block = hit[1] if hit is not None and hit[0] is chunk else join_lines(chunk)
                joined[id(chunk)] = (chunk, block)
                blocks.append(block)
            if chunks:
                blocks.extend(chunks[-1])
            self._blocks, self._joined = blocks, joined
        return self._blocks

    def appended(self, doc: Doc, line: bytes) -> Snapshot:
        """This snapshot with `doc` appended (its line too), as a write makes it. The id map is
        handed over, not copied: this snapshot builds its own again if it is still asked."""
        by_id = self._handed_over()
        orders = self._next_orders(1)
        by_id[doc.entry.id] = orders[0]
        return Snapshot(
            self.docs.appended((doc,)),
            lines=None if self.lines is None else self.lines.appended((line,)),
            parent=self,
            delta=((), (doc,)),
            entries=self.entries.appended((doc.entry,)),
            by_id=by_id,
            orders=self.orders.appended(orders),
        )

    def lines_end_in(self, raw: bytes) -> int | None:
        """Where this version's entry lines end in `raw` when `raw` begins exactly as this
        version's file did (another session appended to it), else None."""
        if self.kept.lines or self.version != FORMAT_VERSION:
            return None  # kept lines follow the entries: an append does not extend the bytes
        if self.raw is not None:
            prefix = memoryview(self.raw)[: self.raw_end]
            return self.raw_end if self.raw_end and raw.startswith(prefix) else None
        blocks = self.blocks
        return None if blocks is None else blocks_end(raw, blocks)

    def grown(self, docs: list[Doc], lines: list[bytes]) -> Snapshot:
        """This snapshot with `docs` (their `lines`) appended, as another session's write made it."""
        by_id = self._handed_over()
        orders = self._next_orders(len(docs))
        for order, doc in zip(orders, docs, strict=True):
            by_id[doc.entry.id] = order
        return Snapshot(
            self.docs.appended(docs),
            lines=None if self.lines is None else self.lines.appended(lines),
            parent=self,
            delta=((), tuple(docs)),
            entries=self.entries.appended([doc.entry for doc in docs]),
            by_id=by_id,
            orders=self.orders.appended(orders),
        )

    def replaced(self, index: int, doc: Doc, line: bytes) -> Snapshot:
        """This snapshot with the entry at `index` replaced by `doc` (same id)."""
        return Snapshot(
            self.docs.replaced(index, doc),
            lines=None if self.lines is None else self.lines.replaced(index, line),
            parent=self,
            delta=((), (doc,)),
            entries=self.entries.replaced(index, doc.entry),
            by_id=self._handed_over(),  # (the same ids and orders)
            orders=self.orders,
        )

    def without(self, drop: set[int]) -> Snapshot:
        """This snapshot without the entries at positions `drop`. When this snapshot is a write's
        (it has a parent and a delta), the result replaces it: its parent is that parent and its
        delta both changes together."""
        removed = tuple(self.entries[i].id for i in drop)
        base = self.parent if self.parent is not None and self.delta is not None else self
        added = self.delta[1] if base is not self and self.delta is not None else ()
        kept = tuple(doc for doc in added if doc.entry.id not in removed)
        gone = tuple(i for i in removed if all(doc.entry.id != i for doc in added))
        by_id = self._handed_over()
        for entry_id in removed:
            by_id.pop(entry_id, None)
        made = Snapshot(
            self.docs.without(drop),
            lines=None if self.lines is None else self.lines.without(drop),
            parent=base,
            delta=(gone, kept),
            entries=self.entries.without(drop),
            kept=self.kept,
            by_id=by_id,
            orders=self.orders.without(drop),
        )
        made._joined = self._joined  # (the blocks this one or its parent joined)
        return made

    def anchor(self, fd: int) -> None:
        """Keep `fd` (this version's file) open while the snapshot lives, so its inode is not
        reused; then close it aside: once a write replaced the file, that last close frees its
        blocks (0.2 ms for 16 KB, 1 ms for 1 MB, 8 ms for 10 MB on this disk), which the writer
        need not wait for."""
        weakref.finalize(self, close_aside, fd).atexit = False  # at exit the OS closes it


def close_aside(fd: int) -> None:
    """Close `fd` on a short-lived thread (directly at interpreter exit, when no thread starts).
    A bare `_thread` thread: `threading.Thread.start` waits for the thread to run (about 150 µs
    against 30 µs here), and a close needs no join."""
    try:
        _thread.start_new_thread(_close_quietly, (fd,))
    except RuntimeError:
        _close_quietly(fd)


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):  # the descriptor was ours alone: nothing else to undo
        os.close(fd)


def _chunked(items: Sequence[T]) -> Chunked[T]:
    return items if isinstance(items, Chunked) else Chunked.of(items, BLOCK_LINES)
