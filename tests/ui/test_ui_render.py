"""The renderer on a plain StringIO console: Markdown blocks, tool lines, notes, errors."""

from __future__ import annotations

from ui_fakes import plain_console

from nanohermes.core.events import (
    Compacted,
    Event,
    Note,
    PlanStep,
    PlanUpdated,
    ReasoningDelta,
    Retrying,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from nanohermes.core.types import ToolCall, ToolResult
from nanohermes.tools.outcomes import finish_summary
from nanohermes.ui.markdown_stream import MarkdownSplitter, visible_tail
from nanohermes.ui.render import Renderer, key_argument

ANSWER = "# Plan\n\nFirst **bold** words\nwrap here.\n\n```python\ndef f():\n\n    return 1\n```\nDone.\n"


def rendered(*events: Event) -> str:
    """What one turn of these events prints on a plain 100-column console."""
    console, out = plain_console()
    renderer = Renderer(console)
    renderer.begin_turn()
    for event in events:
        renderer.handle(event)
    renderer.end_turn()
    return out.getvalue()


def test_splitter_closes_blocks_at_blank_lines_but_not_inside_fences() -> None:
    splitter = MarkdownSplitter()
    blocks: list[str] = []
    for char in ANSWER:
        blocks += splitter.feed(char)
    assert blocks == [
        "# Plan",
        "First **bold** words\nwrap here.",
        "```python\ndef f():\n\n    return 1\n```",
    ]
    assert splitter.tail == "Done.\n"
    assert splitter.finish() == "Done."
    assert splitter.finish() == ""


def test_splitter_tail_is_only_the_open_block() -> None:
    splitter = MarkdownSplitter()
    splitter.feed("para one\n\nsecond para, half writ")
    assert splitter.tail == "second para, half writ"
    splitter.feed("ten\n~~~\ncode")
    assert splitter.tail == "second para, half written\n~~~\ncode"
    assert splitter.feed("\n\nstill code\n") == []  # a blank line in a fence closes nothing


def test_visible_tail_reopens_a_cut_code_fence() -> None:
    tail = "```sh\n" + "\n".join(f"line {n}" for n in range(50))
    shown = visible_tail(tail, 10)
    assert shown.splitlines()[0] == "```sh"
    assert shown.splitlines()[-1] == "line 49"
    assert len(shown.splitlines()) == 10
    assert visible_tail("short", 10) == "short"


def test_streamed_answer_renders_as_markdown_once() -> None:
    text = rendered(*(TextDelta(char) for char in ANSWER), TurnFinished(True, "done"))
    assert "**" not in text
    assert "```" not in text
    assert "First bold words wrap here." in text
    assert "def f():" in text
    assert "return 1" in text
    assert text.count("Plan") == 1
    assert text.count("Done.") == 1
    assert text.index("Plan") < text.index("First") < text.index("def f") < text.index("Done.")


def finished(result: ToolResult) -> ToolFinished:
    """As the tool runner reports a result."""
    return ToolFinished(result, finish_summary(result))


def test_tool_lines_are_compact_with_name_argument_outcome_and_size() -> None:
    read = ToolCall("c1", "read_file", '{"path": "src/app.py"}')
    shell = ToolCall("c2", "run_shell", '{"command": "make test"}')
    lines = rendered(
        TextDelta("Let me look."),
        ToolStarted(read, "src/app.py"),
        ToolStarted(shell),  # no summary: the key argument is taken from the call
        ToolFinished(ToolResult("c1", "read_file", "a\nb\nc\n"), "ok · 3 lines, 6 chars", 0.25),
        finished(ToolResult("c2", "run_shell", "ERROR: exit 2\ntrace", ok=False)),
        ToolFinished(
            ToolResult("c3", "write_file", "refused: the user declined", ok=False),
            "refused · the user declined",
        ),
        ToolFinished(ToolResult("c4", "grep", "interrupted by user", ok=False), "interrupted"),
        finished(ToolResult("c5", "list_files", "x\ny")),
    ).splitlines()
    assert lines[0].startswith("Let me look.")  # text before the tools is flushed first
    assert lines[1:] == [
        "  ✓ read_file src/app.py · 3 lines, 6 chars · 0.2s",
        "  ✗ run_shell make test · error · exit 2",
        "  ✗ write_file · refused · the user declined",
        "  ⏹ grep · interrupted",
        "  ✓ list_files · 2 lines, 3 chars",
    ]


def test_notes_retries_compaction_and_errors_are_single_lines() -> None:
    text = rendered(
        Note("Saved 2 memories"),
        Retrying(2, 1.5, "HTTP 503"),
        Compacted(150_000, 40_000, summarized=True),
        Note("endpoint unreachable:\n  connection refused", "error"),
        TurnFinished(False, "interrupted"),
        TurnFinished(False, "weird"),
    )
    assert text.splitlines() == [
        "Saved 2 memories",
        "retrying in 1.5s (attempt 2): HTTP 503",
        "context compacted (summarized): 150,000 → 40,000 characters, 110,000 characters saved",
        "error: endpoint unreachable: connection refused",
        "turn stopped: weird",
    ]


def test_reasoning_is_printed_before_the_answer() -> None:
    text = rendered(ReasoningDelta("weigh option A\nthen B"), TextDelta("Answer"))
    assert [line.rstrip() for line in text.splitlines()] == ["weigh option A", "then B", "Answer"]


def test_key_argument() -> None:
    assert key_argument(ToolCall("1", "run_shell", '{"command": "ls -la", "timeout": 5}')) == "ls -la"
    assert key_argument(ToolCall("1", "grep", '{"pattern": "x", "path": "src"}')) == "src"
    assert key_argument(ToolCall("1", "x", "not json")) == "not json"
    assert key_argument(ToolCall("1", "x", "[1]")) == ""


def test_running_tools_show_in_the_live_region_with_their_key_argument() -> None:
    console, _ = plain_console()
    renderer = Renderer(console)
    renderer.handle(ToolStarted(ToolCall("c9", "run_shell", '{"command": "pytest -q"}')))
    shown, out = plain_console()
    shown.print(renderer._live_renderable())
    assert "run_shell pytest -q" in out.getvalue()


def test_terminal_controls_from_the_model_or_a_tool_are_shown_not_obeyed() -> None:
    """OSC 52 (write the clipboard), cursor moves and C1 controls in an answer, reasoning, a tool
    line or a note are printed as visible escapes."""
    call = ToolCall("c1", "run_shell", '{"command": "ls\\u001b[2K"}')
    text = rendered(
        ReasoningDelta("think\x1b]0;title\x07\n"),
        TextDelta("Done \x1b]52;c;ZXZpbA==\x1b\\ here\n\n```\nx\x9b2J\n```\n"),
        ToolStarted(call),
        finished(ToolResult("c1", "run_shell", "ERROR: bad\x1b[31m", ok=False)),
        Note("note\x1b[1A"),
        PlanUpdated((PlanStep("plan\x1b[2J step", "in_progress"),)),
        TurnFinished(True, "done"),
    )
    assert "\x1b" not in text
    assert "\x9b" not in text
    assert "\\x1b]52;c;ZXZpbA==\\x1b" in text
    assert "x\\x9b2J" in text
    assert "ls\\x1b[2K" in text
    assert "error · bad\\x1b[31m" in text
    assert "note\\x1b[1A" in text
    assert "◐ plan\\x1b[2J step" in text


def test_a_list_nested_deeper_than_markdown_parses_is_shown_whole() -> None:
    deep = "\n".join("  " * level + f"- level {level}" for level in range(14))
    shown = rendered(TextDelta(deep + "\n\nafter the list\n"), TurnFinished(True, "done"))
    for level in range(14):
        assert f"level {level}" in shown  # markdown-it silently dropped levels 9 and up
    assert "after the list" in shown


def _table(headings: list[str], cells: list[str]) -> str:
    return "\n".join(
        ["| " + " | ".join(headings) + " |", "|---" * len(headings) + "|", "| " + " | ".join(cells) + " |"]
    )


def test_a_table_too_wide_for_the_console_shows_all_its_text() -> None:
    """rich squeezes such a table into columns of "…": its source is shown instead, all of it."""
    wide = _table([f"heading{i}longword" for i in range(30)], [f"cell{i}value" for i in range(30)])
    many = _table([f"h{i}" for i in range(500)], [f"c{i}" for i in range(500)])
    for table, words in ((wide, ["heading29longword", "cell7value"]), (many, ["h499", "c250"])):
        shown = rendered(TextDelta(table + "\n\nafter\x1b[2J the table\n"), TurnFinished(True, "done"))
        for word in words:
            assert word in shown
        assert "after\\x1b[2J the table" in shown  # still terminal-safe


def test_a_table_that_fits_stays_a_table() -> None:
    shown = rendered(
        TextDelta(_table(["name", "size"], ["**a.txt**", "3 B"]) + "\n"), TurnFinished(True, "done")
    )
    assert "| name" not in shown
    assert "**" not in shown
    assert "name" in shown
    assert "a.txt" in shown
    assert "───" in shown


def test_html_in_an_answer_is_shown_as_text_not_dropped() -> None:
    answer = (
        "Use a `Vec<String>`, or Vec<String> in prose, and press <kbd>Ctrl</kbd>+<kbd>C</kbd>.\n\n"
        '<div align="center">\ncentred words\n</div>\n\nAfter &amp; done.\n'
    )
    shown = rendered(TextDelta(answer), TurnFinished(True, "done"))
    assert "Vec<String> in prose" in shown  # rich drew nothing for an HTML tag, so <String> vanished
    assert "<kbd>Ctrl</kbd>" in shown
    assert "centred words" in shown  # the whole <div> block vanished
    assert "After & done." in shown  # entities are still entities


def test_an_image_in_an_answer_is_shown_in_place_with_its_address() -> None:
    shown = rendered(
        TextDelta("See ![the diagram](https://x.example/d.png) here.\n"), TurnFinished(True, "done")
    )
    assert "See the diagram (https://x.example/d.png) here." in shown


def test_a_compaction_that_saved_nothing_says_so_instead_of_a_negative_count() -> None:
    """A summary of a few short messages may be longer than they are: it printed `saved -78`."""
    from nanohermes.core.events import Compacted

    nothing = "nothing saved: the recent messages it keeps hold nearly all of it"
    assert Compacted(1_000, 1_078).saved == nothing
    assert Compacted(5_000, 1_000).saved == "4,000 characters saved"
