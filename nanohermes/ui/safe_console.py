"""A rich `Console` that never writes a control character it was given as text (a net under the
`terminal_safe` of each output path), and plain printing of huge text in pieces: rich's `Text` grows
faster than linearly (4 MB of short lines took 15 s)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderHook
from rich.segment import Segment
from rich.text import Text

from nanohermes.ui.safe_text import terminal_safe

PIECE_CHARS = 8192


class _Sanitised:
    """A renderable drawn as its inner one, minus the control characters in its text."""

    def __init__(self, inner: ConsoleRenderable) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        for segment in console.render(self.inner, options):
            if segment.control:  # rich's own cursor and screen commands: kept
                yield segment
            else:
                yield Segment(terminal_safe(segment.text), segment.style)


class _SanitiseHook(RenderHook):
    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_Sanitised(renderable) for renderable in renderables]


def safe_console(**options: Any) -> Console:
    """`Console(**options)` whose every print is made terminal-safe."""
    console = Console(**options)
    console.push_render_hook(_SanitiseHook())
    return console


def plain_pieces(text: str, width: int, limit: int = PIECE_CHARS) -> Iterator[str]:
    """`text` as runs of whole lines of at most about `limit` characters; a longer line cut at a
    multiple of `width`, where folding breaks it anyway."""
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
