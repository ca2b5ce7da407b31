"""The bytes of memory.json v1 as this program writes them: one entry per line, so the file stays
readable, diffs stay small, and a file read again is parsed line by line (only the lines not seen
before), not as one document."""

from __future__ import annotations

import json
from collections.abc import Sequence

from nanohermes.memory.entry import FORMAT_VERSION, Kept, json_text

_HEAD = b'{\n  "version": %d,\n  "entries": ' % FORMAT_VERSION
_OPEN, _SEPARATOR, _END, _TAIL = b"[\n    ", b",\n    ", b"\n  ]", b"\n}\n"
_TOP_OPEN = b",\n  "

Top = tuple[tuple[str, str], ...]


def _dumps(value: object) -> str:
    return json_text(value)


BLOCK_LINES = 256
"""Entry lines per block: a write joins the lines of the block it changes, never all of them."""


def join_lines(lines: Sequence[bytes]) -> bytes:
    """One block: entry lines joined by the separator."""
    return _SEPARATOR.join(lines)


def blocks_of(lines: Sequence[bytes]) -> list[bytes]:
    """The entry lines joined by the separator, BLOCK_LINES to a block."""
    return [_SEPARATOR.join(lines[i : i + BLOCK_LINES]) for i in range(0, len(lines), BLOCK_LINES)]


def dump_blocks(blocks: Sequence[bytes], kept: Kept | None = None) -> list[bytes]:
    """memory.json v1 from blocks of entry lines (each one or more lines joined by the separator,
    e.g. `blocks_of`), as pieces to write gathered (joined they are the file). `kept`'s entry lines
    follow the entries; its top-level fields follow the entries list."""
    pieces = [_SEPARATOR] * (2 * len(blocks) - 1) if blocks else []
    pieces[::2] = blocks
    if kept is not None and kept.lines:
        rest = _SEPARATOR.join(line.encode() for line in kept.lines)
        pieces += [_SEPARATOR, rest] if pieces else [rest]
    if not pieces:
        return [_HEAD, b"[]", _top(kept), _TAIL]
    return [_HEAD + _OPEN, *pieces, tail_of(kept)]


def _top(kept: Kept | None) -> bytes:
    if kept is None or not kept.top:
        return b""
    return "".join(f",\n  {_dumps(name)}: {value}" for name, value in kept.top).encode()


def tail_of(kept: Kept | None) -> bytes:
    """What follows the entry lines of a file with at least one: the end of the list, the kept
    top-level fields, the end of the document."""
    return b"".join((_END, _top(kept), _TAIL))


def lines_end(raw: bytes) -> int | None:
    """Where the entry lines of a file `split_document` accepts end (None without lines)."""
    if not raw.startswith(_HEAD + _OPEN):
        return None
    end = raw.find(_END, len(_HEAD) + len(_OPEN))
    return None if end < 0 else end


def blocks_end(raw: bytes, blocks: Sequence[bytes]) -> int | None:
    """Where `blocks` (entry lines as `dump_blocks` writes them) end in `raw` when `raw` begins with
    them, else None. Compared in place, without copying."""
    if not blocks or not raw.startswith(_HEAD + _OPEN):
        return None
    offset = len(_HEAD) + len(_OPEN)
    for i, block in enumerate(blocks):
        if i:
            if not raw.startswith(_SEPARATOR, offset):
                return None
            offset += len(_SEPARATOR)
        if not raw.startswith(block, offset):
            return None
        offset += len(block)
    return offset


def lines_after(raw: bytes, offset: int, tail: bytes) -> list[bytes] | None:
    """The entry lines `raw` holds after `offset` (where the lines already known end), when the
    rest of the file is exactly more lines and then `tail`; else None."""
    start = offset + len(_SEPARATOR)
    end = len(raw) - len(tail)
    if end <= start or not raw.startswith(_SEPARATOR, offset) or not raw.endswith(tail):
        return None
    lines = raw[start:end].split(_SEPARATOR)
    return None if any(b"\n" in line for line in lines) else lines


def dump_lines(lines: Sequence[bytes], kept: Kept | None = None) -> list[bytes]:
    """memory.json v1 from entry lines (UTF-8 JSON objects, one line each), as pieces."""
    return dump_blocks(blocks_of(lines), kept)


def split_document(raw: bytes) -> tuple[list[bytes], Top] | None:
    """The entry lines and the other top-level fields (name, JSON value) of a file laid out exactly
    as `dump_lines` writes it, else None. A JSON string cannot hold a raw newline, so neither the
    separator nor the end of the list occurs inside an entry line."""
    start = len(_HEAD)
    if not raw.startswith(_HEAD) or not raw.endswith(_TAIL):
        return None
    if raw.startswith(b"[]", start):
        lines: list[bytes] = []
        rest = start + 2
    elif raw.startswith(_OPEN, start):
        end = raw.find(_END, start)
        if end < 0:
            return None
        lines = raw[start + len(_OPEN) : end].split(_SEPARATOR)
        rest = end + len(_END)
    else:
        return None
    tail = raw[rest : -len(_TAIL)]
    if not tail:
        return lines, ()
    top = _top_fields(tail)
    return None if top is None else (lines, top)


def _top_fields(tail: bytes) -> Top | None:
    """The fields after the entries list (`,\\n  "name": value…`), or None when they are not plain
    extra fields (then the whole document is parsed: a repeated `version` or `entries` wins there)."""
    if not tail.startswith(_TOP_OPEN):
        return None
    try:
        data = json.loads(b"{" + tail[1:] + b"}")
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or "version" in data or "entries" in data:
        return None
    return tuple((name, _dumps(value)) for name, value in data.items())


_STEP = 1 << 16  # bytes compared at once (memcmp) before halving down to the first difference


def common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix of `a` and `b`, compared in place."""
    size = min(len(a), len(b))
    view = memoryview(a)
    low = 0  # a[:low] == b[:low]
    while low < size:
        high = min(low + _STEP, size)
        if not b.startswith(view[low:high], low):
            break
        low = high
    else:
        return size
    while high - low > 1:  # a[:high] != b[:high]
        middle = (low + high) // 2
        if b.startswith(view[low:middle], low):
            low = middle
        else:
            high = middle
    return low


def common_suffix(a: bytes, b: bytes) -> int:
    """The length of the longest common suffix of `a` and `b`, compared in place."""
    size = min(len(a), len(b))
    view, end_a, end_b = memoryview(a), len(a), len(b)
    low = 0  # a[end_a - low:] == b[end_b - low:]
    while low < size:
        high = min(low + _STEP, size)
        if not b.endswith(view[end_a - high : end_a - low], 0, end_b - low):
            break
        low = high
    else:
        return size
    while high - low > 1:
        middle = (low + high) // 2
        if b.endswith(view[end_a - middle : end_a - low], 0, end_b - low):
            low = middle
        else:
            high = middle
    return low


def changed_line(before: bytes, after: bytes) -> tuple[bytes, bytes] | None:
    """(old line, new line) when `after` is `before` (both as `dump_lines` writes them) with one
    entry line changed in place and every other byte the same; else None."""
    head = common_prefix(before, after)
    if head == len(before) or head == len(after):
        return None  # one ends where the other goes on: not one line changed
    same_end = min(common_suffix(before, after), len(before) - head, len(after) - head)
    start = _line_start(after, head)
    if start is None:
        return None
    old_end, new_end = _line_end(before, start), _line_end(after, start)
    if old_end is None or new_end is None or len(before) - old_end != len(after) - new_end:
        return None  # the lines after it are not where they were
    if len(before) - same_end > old_end or len(after) - same_end > new_end:
        return None  # something after this line changed too
    return before[start:old_end], after[start:new_end]


def removed_line(before: bytes, after: bytes, tail: bytes) -> tuple[bytes, list[bytes]] | None:
    """(the removed line, the lines appended) when `after` is `before` (both as `dump_lines` writes
    them, ending in `tail`) with one entry line taken out (not the last) and zero or more lines
    appended, every other byte the same (a forget, or an append that evicted at the cap); else
    None."""
    head = common_prefix(before, after)
    start = None if head == len(before) or not before.endswith(tail) else _line_start(after, head)
    old_end = None if start is None else _line_end(before, start)
    end = len(before) - len(tail)  # where before's entry lines end
    if start is None or old_end is None or old_end >= end:
        return None
    rest = memoryview(before)[old_end + len(_SEPARATOR) : end]  # the lines after it, moved up
    if not after.startswith(rest, start):
        return None
    offset = start + len(rest)
    if len(after) - offset == len(tail) and after.endswith(tail):
        return before[start:old_end], []
    added = lines_after(after, offset, tail)
    return None if added is None else (before[start:old_end], added)


_LINE_START = _SEPARATOR[1:]  # "\n    ": what precedes every entry line


def _line_start(raw: bytes, offset: int) -> int | None:
    """Where the entry line holding `offset` starts; None when `offset` is in the head. No JSON
    string holds a raw newline, so "\n    " only ever precedes an entry line."""
    start = raw.rfind(_LINE_START, 0, offset) + len(_LINE_START)
    return start if start >= len(ENTRIES_START) else None


def _line_end(raw: bytes, start: int) -> int | None:
    newline = raw.find(b"\n", start)
    if newline < 0:
        return None
    return newline - 1 if raw.startswith(b",", newline - 1) else newline


ENTRIES_START = _HEAD + _OPEN
"""What precedes the first entry line of a file with entries, as this program writes it."""
SEPARATOR = _SEPARATOR
"""What separates two entry lines."""
ENTRIES_END = _END
"""What follows the last entry line."""
