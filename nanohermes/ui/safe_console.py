"""A rich `Console` that never writes a control character it was given as text.

Each output path already passes hostile text through `terminal_safe` before laying it out (so widths
are right); this is the net under all of them. A render hook wraps everything printed: the text of
every segment rich renders goes through `terminal_safe`, while its styles (nanohermes's own colours)
and the control segments rich itself makes (cursor moves of a live region) pass unchanged. A path
that forgets to sanitise may then wrap a line a little late, but it cannot retitle the window, write
the clipboard or hide what follows behind an unterminated escape sequence.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderHook
from rich.segment import Segment

from nanohermes.ui.safe_text import terminal_safe


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
