"""Long text printed as plain text in pieces, so that rich lays it out in linear time.

rich's `Text` takes time that grows faster than its length (each line is split off a copy of the
rest): 1 MB of short lines took 1.6 s, 4 MB 15 s; one 4 MB line 1.5 s. Printed in pieces of at most
PIECE_CHARS characters, each piece costs the same, and the output is the same text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.text import Text

if TYPE_CHECKING:
    from rich.console import Console

PIECE_CHARS = 8192


def plain_pieces(text: str, width: int, limit: int = PIECE_CHARS) -> Iterator[str]:
    """`text` as runs of whole lines of at most about `limit` characters. A longer line is cut at a
    multiple of `width`, where folding it would break it anyway."""
    step = max(width, limit - limit % max(1, width))
    run: list[str] = []
    size = 0
    for line in text.split("\n"):
        if size and size + len(line) > limit:
            yield "\n".join(run)
            run, size = [], 0
        start = 0
        while len(line) - start > limit:  # by index: cutting copies of the rest would be quadratic
            yield line[start : start + step]
            start += step
        run.append(line[start:])
        size += len(line) - start + 1
    yield "\n".join(run)


def print_plain(console: Console, text: str, style: str = "") -> None:
    """Print `text` (already terminal-safe) as it is, folded at the console's width."""
    for piece in plain_pieces(text, console.width):
        console.print(Text(piece, style=style), overflow="fold")
