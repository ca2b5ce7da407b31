"""An immutable sequence kept in chunks, so that a changed copy costs O(chunk + N / chunk), not O(N).

A snapshot of memory.json holds its entries, documents and JSON lines in file order; every write
makes a new version with one entry appended, replaced or removed. Copying three lists of 50,000
items per write costs milliseconds (every item's reference count is touched twice: once copied, once
freed), so a version shares every chunk it did not change with the version it came from. Chunks are
tuples of at most `size` items; a removal leaves its chunk shorter, and the chunks are laid out again
once too many are short.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar, overload

T = TypeVar("T")


class Chunked(Sequence[T]):
    __slots__ = ("_chunks", "_firsts", "_len", "_size", "_starts")

    def __init__(self, chunks: list[tuple[T, ...]], size: int) -> None:
        """`chunks`: non-empty tuples of at most `size` items each (use `of` to cut a sequence)."""
        self._chunks = chunks
        self._size = size
        self._len = sum(map(len, chunks))
        self._starts: list[int] | None = None  # where each chunk starts (built on first use)
        self._firsts: list[T] | None = None  # each chunk's first item (`find_sorted`)

    @classmethod
    def of(cls, items: Iterable[T], size: int) -> Chunked[T]:
        found = items if isinstance(items, list | tuple) else list(items)
        return cls([tuple(found[i : i + size]) for i in range(0, len(found), size)], size)

    @property
    def chunks(self) -> list[tuple[T, ...]]:
        """The chunks in order (do not change the list)."""
        return self._chunks

    @property
    def size(self) -> int:
        return self._size

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[T]:
        return itertools.chain.from_iterable(self._chunks)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("Chunked index out of range")
        chunk, offset = self.locate(index)
        return self._chunks[chunk][offset]

    def locate(self, index: int) -> tuple[int, int]:
        """(chunk, offset in it) of the item at `index` (0 ≤ index < len)."""
        starts = self._starts_list()
        chunk = bisect.bisect_right(starts, index) - 1
        return chunk, index - starts[chunk]

    def _starts_list(self) -> list[int]:
        starts = self._starts
        if starts is None:
            starts = self._starts = list(itertools.accumulate(map(len, self._chunks[:-1]), initial=0))
        return starts

    def find_sorted(self: Chunked[int], value: int) -> int | None:
        """The position of `value` in this sequence of increasing numbers, or None. O(log N)."""
        firsts = self._firsts
        if firsts is None:
            firsts = self._firsts = [chunk[0] for chunk in self._chunks]
        found = bisect.bisect_right(firsts, value) - 1
        if found < 0:
            return None
        chunk = self._chunks[found]
        offset = bisect.bisect_left(chunk, value)
        if offset == len(chunk) or chunk[offset] != value:
            return None
        return self._starts_list()[found] + offset

    def appended(self, items: Sequence[T]) -> Chunked[T]:
        """A copy with `items` appended: the last chunk filled up, then new chunks."""
        chunks = list(self._chunks)
        size = self._size
        rest = list(items)
        if chunks and len(chunks[-1]) < size:
            room = size - len(chunks[-1])
            chunks[-1] += tuple(rest[:room])
            rest = rest[room:]
        chunks.extend(tuple(rest[i : i + size]) for i in range(0, len(rest), size))
        return self._made(chunks)

    def replaced(self, index: int, item: T) -> Chunked[T]:
        """A copy with the item at `index` replaced by `item`."""
        chunk, offset = self.locate(index)
        chunks = list(self._chunks)
        old = chunks[chunk]
        chunks[chunk] = (*old[:offset], item, *old[offset + 1 :])
        made = self._made(chunks)
        made._starts = self._starts  # the same lengths
        return made

    @property
    def last(self) -> T:
        """The last item (IndexError when empty)."""
        if not self._chunks:
            raise IndexError("Chunked is empty")
        return self._chunks[-1][-1]

    def without(self, drop: Iterable[int]) -> Chunked[T]:
        """A copy without the items at positions `drop`: only their chunks are copied; the chunks
        are laid out again once more than a quarter of them (and at least 8) are short."""
        by_chunk: dict[int, set[int]] = {}
        for index in drop:
            chunk, offset = self.locate(index)
            by_chunk.setdefault(chunk, set()).add(offset)
        chunks = list(self._chunks)
        for chunk, offsets in by_chunk.items():
            chunks[chunk] = tuple(item for i, item in enumerate(chunks[chunk]) if i not in offsets)
        kept = [chunk for chunk in chunks if chunk]
        short = sum(len(chunk) < self._size for chunk in kept[:-1])
        if short >= 8 and 4 * short > len(kept):
            return Chunked.of(list(itertools.chain.from_iterable(kept)), self._size)
        return self._made(kept)

    def _made(self, chunks: list[tuple[T, ...]]) -> Chunked[T]:
        return Chunked(chunks, self._size)
