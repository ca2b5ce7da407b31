"""Huge and hostile replies: rich is only ever given a bounded amount of text to lay out at a time.

rich's layout of one Markdown block or one `Text` takes time that grows with its size, faster than
linearly: a 100,000-row table took 33 s after it had streamed, a never-closed code fence made every
refresh of the live region cost more than the one before. No timing here: the tests check which path
a block takes and how much text each call is given.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console, ConsoleRenderable, RenderHook
from rich.markdown import Markdown
from rich.text import Text
from ui_fakes import plain_console

from nanohermes.core.events import ReasoningDelta, TextDelta, TurnFinished
from nanohermes.ui import markdown_stream, render
from nanohermes.ui.markdown_stream import MarkdownSplitter, visible_tail
from nanohermes.ui.render import Renderer
from nanohermes.ui.safe_console import PIECE_CHARS, plain_pieces

MB = 1_000_000


class _Sizes(RenderHook):
    """Records how many characters each Text or Markdown printed holds."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        for renderable in renderables:
            if isinstance(renderable, Text):
                self.sizes.append(len(renderable.plain))
            elif isinstance(renderable, Markdown):
                self.sizes.append(len(renderable.markup))
        return renderables


def _stream(renderer: Renderer, text: str, delta: int, event: Any = TextDelta) -> None:
    for start in range(0, len(text), delta):
        renderer.handle(event(text[start : start + delta]))
        renderer.tick()


def test_a_block_longer_than_markdown_can_lay_out_quickly_is_printed_as_plain_text_whole() -> None:
    """A 20,000-row table took 6 s to lay out, 100,000 rows 33 s (after the reply had streamed)."""
    rows = 6_000  # 100 KB: twice as long as a block laid out as Markdown
    table = "| n | **v** |\n|---|---|\n" + "".join(f"| {n} | **{n}** |\n" for n in range(rows))
    console, out = plain_console()
    renderer = Renderer(console)
    renderer.begin_turn()
    _stream(renderer, table, 4096)
    renderer.handle(TurnFinished(True, "done"))
    renderer.end_turn()
    shown = out.getvalue()
    assert "|---|---|" in shown
    assert f"| {rows - 1} | **{rows - 1}** |" in shown
    assert shown.replace("\n", "") == table.replace("\n", "")  # nothing lost


def test_rich_is_given_no_text_larger_than_a_piece_of_a_huge_answer_or_reasoning() -> None:
    """One 1 MB line of answer, 1 MB of reasoning on one line, and 1 MB of short lines."""
    console, out = plain_console()
    sizes = _Sizes()
    console.push_render_hook(sizes)
    renderer = Renderer(console)
    renderer.begin_turn()
    _stream(renderer, "q" * MB, 4096, ReasoningDelta)
    _stream(renderer, "a" * MB + "\n\n" + "short line\n" * (MB // 11), 4096)
    renderer.handle(TurnFinished(True, "done"))
    renderer.end_turn()
    assert max(sizes.sizes) <= PIECE_CHARS
    shown = out.getvalue().replace("\n", "")
    assert shown.count("q") == MB
    assert shown.count("a") == MB
    assert shown.count("short line") == MB // 11


def test_a_live_refresh_of_a_never_closed_code_fence_looks_at_its_end_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each refresh joined and split the whole open block: 0.14 s for 10 MB, ten times a second."""
    seen: list[int] = []

    def spy(tail: str, max_lines: int, max_chars: int = MB) -> str:
        seen.append(len(tail))
        return visible_tail(tail, max_lines, max_chars)

    monkeypatch.setattr(markdown_stream, "visible_tail", spy)
    monkeypatch.setattr(render, "visible_tail", spy, raising=False)
    console = Console(file=io.StringIO(), width=100, height=40, force_terminal=True)
    renderer = Renderer(console)
    renderer.begin_turn()
    try:
        _stream(renderer, "```python\n" + "print('x')\n" * (MB // 11), 4096)
        shown = renderer._text.visible(36, 3600)
    finally:
        renderer.end_turn()
    assert seen
    assert max(seen) <= 2 * 3600 + 200
    assert shown.startswith("```python\n")
    assert shown.endswith("print('x')\n")


@pytest.mark.parametrize(
    "text",
    [
        "```sh\n" + "".join(f"line {n}\n" for n in range(80)) + "partial",
        "intro\n" + "x" * 5000 + "```py\n" + "y\n" * 50,  # a long line's end looks like a fence
        "```" + "z" * 9000,  # a partial line that is a long fence opener
        "~~~\n" + "w" * 9000 + "\nlast",
        "a\nb\n",
    ],
)
def test_the_splitters_visible_end_is_visible_tail_of_the_whole_block(text: str) -> None:
    splitter = MarkdownSplitter()
    splitter.feed(text)
    for max_lines, max_chars in ((1, 50), (10, 300), (36, 3600)):
        shown = splitter.visible(max_lines, max_chars)
        assert len(shown) <= 2 * max_chars + 1
        if not text.startswith("```z"):  # visible_tail showed such a line twice
            assert shown == visible_tail(splitter.tail, max_lines, max_chars)


def test_plain_pieces_are_bounded_and_join_back_to_the_text() -> None:
    text = "a" * 50_000 + "\n\n" + "line\n" * 5000 + "b" * 10
    pieces = list(plain_pieces(text, 100))
    assert max(map(len, pieces)) <= PIECE_CHARS
    assert all(len(piece) % 100 == 0 for piece in pieces[:6])  # a long line is cut where it folds
    assert "".join(pieces).replace("\n", "") == text.replace("\n", "")
    lines = "".join(f"line {n}\n" for n in range(5000))
    assert "\n".join(plain_pieces(lines, 100)) == lines
