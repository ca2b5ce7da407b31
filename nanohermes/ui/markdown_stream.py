"""Split streamed Markdown into closed blocks (printed once) and an open tail (re-rendered live)."""

from __future__ import annotations

import re
import sys

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _fence_marker(line: str) -> str | None:
    match = _FENCE.match(line)
    return match.group(1) if match else None


class PartialLine:
    """Streamed text split into lines. The line being written is kept as its pieces (joined once, when
    read): a 1 MB line in 100,000 deltas costs O(delta) each."""

    def __init__(self) -> None:
        self._pieces: list[str] = []

    def __bool__(self) -> bool:
        return bool(self._pieces)

    @property
    def text(self) -> str:
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""

    def feed(self, text: str) -> list[str]:
        """Add `text`; the lines it completed."""
        if text:
            self._pieces.append(text)
        if "\n" not in text:
            return []
        *lines, rest = self.text.split("\n")
        self._pieces = [rest] if rest else []
        return lines

    def take(self) -> str:
        text, self._pieces = self.text, []
        return text

    def end(self, max_chars: int) -> str:
        """The last `max_chars` characters of the line being written, joining no more pieces than those."""
        kept: list[str] = []
        size = 0
        for piece in reversed(self._pieces):
            if size >= max_chars:
                break
            kept.append(piece)
            size += len(piece)
        return "".join(reversed(kept))[-max_chars:]


class MarkdownSplitter:
    """A block closes at a blank line outside a code fence, or at the line that closes a fence."""

    def __init__(self) -> None:
        self._closed_lines: list[str] = []
        self._partial = PartialLine()
        self._fence: str | None = None
        self._fence_line = ""  # the line that opened the open block's fence
        self._fence_at = 0  # and its index in `_closed_lines`

    @property
    def tail(self) -> str:
        """The open block, the line being written included."""
        return "\n".join([*self._closed_lines, self._partial.text])

    def visible(self, max_lines: int, max_chars: int) -> str:
        """`visible_tail(self.tail, max_lines, max_chars)` from the block's last lines only: joining a
        never-closed 10 MB block took 0.14 s, ten times a second."""
        last = [_cut(self._partial.end(max_chars + 1), max_chars)]
        size = len(last[0])
        first_kept = len(self._closed_lines)
        while first_kept and len(last) <= max_lines and size <= max_chars:  # one more than shown
            first_kept -= 1
            last.append(_cut(self._closed_lines[first_kept], max_chars))
            size += len(last[-1]) + 1
        opener = self._fence is not None and self._fence_at < first_kept
        shown = [self._fence_line[:max_chars]] if opener else []  # cut off here: visible_tail puts it back
        return visible_tail("\n".join([*shown, *reversed(last)]), max_lines, max_chars)

    def feed(self, text: str) -> list[str]:
        return [block for line in self._partial.feed(text) if (block := self._take_line(line))]

    def finish(self) -> str:
        """Everything left, as one block (maybe empty)."""
        rest = self.tail
        self._closed_lines = []
        self._partial.take()
        self._fence = None
        return rest.strip("\n")

    def _take_line(self, line: str) -> str | None:
        marker = _fence_marker(line)
        if self._fence is not None:
            self._closed_lines.append(line)
            closes = marker and marker[0] == self._fence[0] and len(marker) >= len(self._fence)
            if closes and not line.strip()[len(marker or "") :].strip():
                self._fence = None
                return self._close()
            return None
        if marker:
            self._fence, self._fence_line, self._fence_at = marker, line, len(self._closed_lines)
            self._closed_lines.append(line)
            return None
        if not line.strip():
            return self._close()
        self._closed_lines.append(line)
        return None

    def _close(self) -> str | None:
        block = "\n".join(self._closed_lines).strip("\n")
        self._closed_lines = []
        return block or None


def _cut(line: str, max_chars: int) -> str:
    """The end of a too long line after a mark, which visible_tail cuts off again: the end may look
    like a fence opener (`x```py` cut to "```py") and must not be taken for one."""
    return line if len(line) <= max_chars else "…" + line[-max_chars:]


def visible_tail(tail: str, max_lines: int, max_chars: int = sys.maxsize) -> str:
    """The end of an open block that fits in `max_lines` lines and `max_chars` characters (all a live
    region shows), re-opening its code fence when one was cut off."""
    lines = tail.split("\n")
    if len(lines) <= max_lines and len(tail) <= max_chars:
        return tail
    keep = "\n".join(lines[-max(1, max_lines - 1) :])[-max_chars:]
    opener = next((index for index, line in enumerate(lines) if _fence_marker(line)), None)
    if opener is not None and sum(len(line) + 1 for line in lines[:opener]) < len(tail) - len(keep):
        return "\n".join([lines[opener].strip(), keep])  # the opener is not (all) in what is kept
    return "\n".join(lines[-max_lines:])[-max_chars:]
