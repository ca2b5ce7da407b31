"""Render the agent's events with rich. Closed Markdown blocks are printed once; only the open one lives
in a rate-limited `Live` region, so a long answer costs the same per token as a short one."""

from __future__ import annotations

import functools
import re
import sys
import time
from typing import TYPE_CHECKING

from rich.text import Text

from nanohermes.core.events import (
    Compacted,
    Event,
    MemoryRecalled,
    Note,
    PlanUpdated,
    ReasoningDelta,
    Retrying,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from nanohermes.core.toolcalls import key_argument
from nanohermes.core.types import shorten
from nanohermes.ui.markdown_stream import MarkdownSplitter, PartialLine
from nanohermes.ui.safe_console import print_plain
from nanohermes.ui.safe_text import one_line, terminal_safe

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from rich.console import Console, RenderableType
    from rich.live import Live
    from rich.markdown import Markdown

NOTE_STYLES = {"info": "dim", "debug": "dim", "warning": "yellow", "error": "bold red"}
CODE_THEME = "monokai"
REFRESH_PER_SECOND = 10
EXPLAINED_REASONS = ("done", "interrupted", "error", "max_iterations")  # the agent said why in a Note
MARKDOWN_MAX_NESTING = 20  # `maxNesting` of markdown-it's commonmark preset
MARKDOWN_MAX_CHARS = 50_000
"""A longer block is shown as plain text: as Markdown it takes seconds Ctrl-C cannot stop (a
20,000-row table 6 s, 1 MB of code 11 s); 50,000 characters of table take under a second."""
_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s")
PLAN_MARKS = {"completed": ("☑", "green"), "in_progress": ("◐", "bold yellow"), "pending": ("☐", "")}


def _tables_fit(console: Console, markdown: Markdown) -> bool:
    """rich squeezes a table wider than the console into columns of "…", its cell text shown nowhere:
    measure each table's narrowest rendering (rich's own measurement, as its Markdown builds it)."""
    if not any(token.type == "table_open" for token in markdown.parsed):
        return True  # most blocks hold no table: no tree to build
    from markdown_it.tree import SyntaxTreeNode
    from rich import box
    from rich.measure import Measurement
    from rich.table import Table

    unbounded = console.options.update_width(sys.maxsize)  # Measurement.get clamps to the width
    for node in SyntaxTreeNode(markdown.parsed).walk():
        if node.type != "table":
            continue
        rows = [
            [cell.children[0].content if cell.children else "" for cell in row.children]
            for row in node.walk()
            if row.type == "tr"
        ]
        table = Table(*rows[0], box=box.SIMPLE, pad_edge=False, show_edge=True, collapse_padding=True)
        for row in rows[1:]:
            table.add_row(*row)
        if Measurement.get(console, unbounded, table).minimum > console.options.max_width:
            return False
    return True


def _answer(console: Console, safe: str) -> RenderableType:
    """An answer block as Markdown; as plain text when rich would lose some of it."""
    from rich.markdown import Markdown  # markdown-it and pygments load on the first answer only

    # hyperlinks=False: a link's target is printed after its text, not hidden in an OSC 8 sequence
    # (where `[https://bank.example](https://evil.example)` would open the second on a click)
    markdown = Markdown("", code_theme=CODE_THEME, hyperlinks=False)
    markdown.markup, markdown.parsed = safe, _parser().parse(safe)
    # markdown-it stops parsing at its nesting limit (lists ~9 levels deep) and drops the rest of the
    # block without a word
    too_deep = any(token.level >= MARKDOWN_MAX_NESTING - 1 for token in markdown.parsed)
    if too_deep or not _tables_fit(console, markdown):
        return Text(safe)
    _links_shown_once(markdown)
    return markdown


@functools.cache
def _parser() -> MarkdownIt:
    """rich's parser with HTML off: rich draws nothing for HTML (the `<String>` of `Vec<String>`
    vanished). Built once: building one costs as much as parsing a block."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table")


def _links_shown_once(markdown: Markdown) -> None:
    """A link that is its own address as its text alone (rich shows `text (address)`: twice); an
    image as `alt (address)` (rich drew `🌆 alt`, the address lost)."""
    for token in markdown.parsed:
        children = token.children
        if not children:
            continue
        kept, i = [], 0
        while i < len(children):
            opened, *inner = children[i : i + 3]
            shape = [opened.type, *(child.type for child in inner)]
            if shape == ["link_open", "text", "link_close"] and (
                opened.markup == "autolink" or inner[0].content == opened.attrs.get("href")
            ):
                kept.append(inner[0])  # the text, without the link around it
                i += 3
                continue
            if opened.type == "image":
                source = opened.attrs.get("src")
                shown = f"{opened.content} ({source})" if source else opened.content
                opened = opened.copy(type="text", tag="", content=shown, children=None)
            kept.append(opened)
            i += 1
        token.children = kept


class Renderer:
    """Turns events into terminal output. One instance per REPL; `begin_turn`/`end_turn` around a turn."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._live: Live | None = None
        self._text = MarkdownSplitter()
        self._reasoning = PartialLine()
        self._running: dict[str, tuple[str, str]] = {}  # call id → (name, key argument)
        self._waiting = False
        self._printed_answer = False
        self._built_at = 0.0
        self._stale = False

    def begin_turn(self) -> None:
        self._waiting = True
        self._printed_answer = False
        self.resume()

    def end_turn(self) -> None:
        """Safe to call twice, or after Ctrl-C."""
        self._waiting = False
        self._running.clear()
        self.pause()

    def pause(self) -> None:
        """Release the terminal (for an approval question); `resume` takes it back."""
        self._flush()
        live, self._live = self._live, None
        if live is not None:
            live.update(Text(""))
            live.stop()

    def resume(self) -> None:
        if self._live is not None or not self.console.is_terminal:
            return
        from rich.live import Live

        self._live = Live(
            self._live_renderable(),
            console=self.console,
            refresh_per_second=REFRESH_PER_SECOND,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()

    def handle(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            if event.text:
                self._flush_reasoning()
                self._waiting = False
            for block in self._text.feed(event.text):
                self._print_markdown(block)
        elif isinstance(event, ReasoningDelta):
            for line in self._reasoning.feed(event.text):
                print_plain(self.console, terminal_safe(line), style="dim italic")
        elif isinstance(event, ToolStarted):
            self._flush()
            self._waiting = False
            self._running[event.call.id] = (event.call.name, event.summary or key_argument(event.call))
        elif isinstance(event, ToolFinished):
            self._on_tool_finished(event)
        elif isinstance(event, Note):
            self.note(event.text, event.level)
        elif isinstance(event, Retrying):
            self.note(f"retrying in {event.delay:.1f}s (attempt {event.attempt}): {event.reason}")
        elif isinstance(event, Compacted):
            how = "summarized" if event.summarized else "trimmed"
            chars = f"{event.before_chars:,} → {event.after_chars:,} characters"
            self.note(f"context compacted ({how}): {chars}, {event.saved}")
        elif isinstance(event, MemoryRecalled):  # dim, before the answer (SPEC §3.10)
            self.note(f"memory: {len(event.memories)} recalled · /memory last")
        elif isinstance(event, PlanUpdated):
            self._flush()  # the whole checklist, once per update: the plan, never the model's own text
            for step in event.steps:
                mark, style = PLAN_MARKS[step.status]
                self.console.print(Text(f"  {mark} {terminal_safe(step.step)}", style=style), overflow="fold")
        elif isinstance(event, TurnFinished):
            self._flush()
            self._waiting = False
            if not event.completed and event.reason not in EXPLAINED_REASONS:
                self.note(f"turn stopped: {event.reason}", "warning")
        self._refresh(urgent=not isinstance(event, TextDelta | ReasoningDelta))

    def tick(self) -> None:
        """While no event comes: show the text the refresh limit held back."""
        if self._stale:
            self._refresh(urgent=True)

    def note(self, text: str, level: str = "info") -> None:
        self._flush()
        style = NOTE_STYLES.get(level, "dim")
        prefix = "error: " if level == "error" and not text.lower().startswith("error") else ""
        self.console.print(Text(one_line(prefix + text), style=style), overflow="fold")

    def _on_tool_finished(self, event: ToolFinished) -> None:
        """`✓ read_file src/a.py · 12 lines, 340 B · 0.1s`."""
        self._flush()
        result = event.result
        argument = terminal_safe(self._running.pop(result.call_id, ("", ""))[1])
        outcome = terminal_safe(event.summary.removeprefix("ok · "))  # every producer sums the result up
        interrupted = outcome == "interrupted"
        line = Text("  ")
        mark, style = ("✓ ", "green") if result.ok else ("⏹ ", "yellow") if interrupted else ("✗ ", "red")
        line.append(mark, style=style)
        line.append(terminal_safe(result.name), style="bold")
        if argument:
            line.append(" " + shorten(argument, 60), style="cyan")
        line.append(f" · {shorten(outcome, 100)}", style="dim" if result.ok else style)
        if event.elapsed >= 0.05:
            line.append(f" · {event.elapsed:.1f}s", style="dim")
        self.console.print(line, overflow="ellipsis", no_wrap=True)
        self._waiting = not self._running  # the model is called again with the results: spin meanwhile

    def _print_markdown(self, block: str) -> None:
        if self._printed_answer and not _LIST_ITEM.match(block):  # rich already opens lists with one
            self.console.print()
        safe = terminal_safe(block)
        if len(safe) > MARKDOWN_MAX_CHARS:
            print_plain(self.console, safe)
        else:
            self.console.print(_answer(self.console, safe))
        self._printed_answer = True

    def _flush(self) -> None:
        """Print the reasoning and the answer streamed so far, before a line that comes after them."""
        self._flush_reasoning()
        rest = self._text.finish()
        if rest.strip():
            self._print_markdown(rest)

    def _flush_reasoning(self) -> None:
        if self._reasoning:
            print_plain(self.console, terminal_safe(self._reasoning.take()), style="dim italic")

    def _live_renderable(self) -> RenderableType:
        from rich.console import Group
        from rich.spinner import Spinner

        parts: list[RenderableType] = []
        height = max(3, self.console.size.height - 4)
        room = height * self.console.width  # the most a live region can show: lay out no more
        if self._reasoning:
            parts.append(Text(terminal_safe(self._reasoning.end(room)), style="dim italic"))
        tail = self._text.visible(height, room)  # its end only: the block may be megabytes long
        if tail.strip():
            parts.append(_answer(self.console, terminal_safe(tail)))
        for name, argument in self._running.values():
            label = terminal_safe(f"{name} {argument}".strip())
            parts.append(Spinner("dots", Text(" " + shorten(label, 70), style="dim")))
        if self._waiting and not parts:
            parts.append(Spinner("dots", Text(" thinking…", style="dim")))
        return Group(*parts)

    def _refresh(self, *, urgent: bool) -> None:
        """Rebuild the live region: at once for a tool, a note or the end; for streamed text (a long
        answer is a hundred thousand deltas) at most REFRESH_PER_SECOND times a second."""
        if self._live is None:
            return
        now = time.monotonic()
        if not urgent and now - self._built_at < 1 / REFRESH_PER_SECOND:
            self._stale = True
            return
        self._built_at, self._stale = now, False
        self._live.update(self._live_renderable())
