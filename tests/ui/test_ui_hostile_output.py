"""Hostile text on its way to the terminal: a model's reply, a server's tool list, a huge command.

None of it may put a control sequence on the terminal, crash the output, or take time that grows with
the square of its length.
"""

from __future__ import annotations

import io
import json
import re
import sys
import time
from pathlib import Path

from cli_process import run_nanohermes
from fake_server import FakeServer
from fake_server import fake_server as fake_server
from rich.console import Console
from rich.text import Text
from ui_fakes import plain_console

from nanohermes.core.events import ReasoningDelta, TextDelta, TurnFinished
from nanohermes.core.protocols import ApprovalRequest
from nanohermes.ui.approve import TerminalApprover
from nanohermes.ui.oneshot import _AnswerPrinter
from nanohermes.ui.render import Renderer
from nanohermes.ui.safe_console import safe_console

ESCAPE_SERVER = Path(__file__).with_name("escape_mcp_server.py")
MB = 1_000_000
DELTA = 8  # characters per streamed delta, as the fake server sends them
SGR = re.compile(r"\x1b\[[0-9;]*m")


def terminal_console(out: io.StringIO) -> Console:
    """A console that believes it is a 100×40 colour terminal (so rich starts live regions and
    writes styles and hyperlinks)."""
    return Console(file=out, width=100, height=40, force_terminal=True, color_system="truecolor")


def within(seconds: float, pieces: list[str], feed: object) -> float:
    """Feed every piece, failing as soon as `seconds` have passed (quadratic code fails fast)."""
    assert callable(feed)
    start = time.monotonic()
    for n, piece in enumerate(pieces):
        feed(piece)
        if n % 1000 == 0:
            elapsed = time.monotonic() - start
            assert elapsed < seconds, f"only {n * DELTA:,} characters fed after {elapsed:.1f}s"
    return time.monotonic() - start


def test_a_markdown_link_shows_its_target_instead_of_hiding_it_in_an_osc_8_hyperlink() -> None:
    """`[https://bank.example](https://evil.example/steal)` rendered as an OSC 8 hyperlink: the terminal
    showed the bank's address and opened the other on a click."""
    out = io.StringIO()
    renderer = Renderer(terminal_console(out))
    renderer.handle(TextDelta("Log in at [https://bank.example](https://evil.example/steal) now.\n\n"))
    renderer.end_turn()
    text = out.getvalue()
    assert "\x1b]8;" not in text
    assert "https://evil.example/steal" in SGR.sub("", text)
    assert "https://bank.example" in SGR.sub("", text)


def test_an_approval_of_a_huge_command_is_clipped_and_shows_how_it_ends() -> None:
    """A one-line 1 MB command printed 10,000 rows (and took seconds to highlight) before the question;
    the `rm` at its end was 10,000 rows below its start."""
    command = "echo " + "a b " * (MB // 4) + "; rm -rf ~/x"
    console, out = plain_console()
    started = time.monotonic()
    TerminalApprover(console, read_key=lambda question: "n")(ApprovalRequest("run_shell", "Run", command))
    assert time.monotonic() - started < 5
    shown = out.getvalue()
    assert len(shown) < 20_000  # a few screens at most
    assert "echo a b a b" in shown  # its start
    assert "; rm -rf ~/x" in shown  # and its end
    hidden = re.search(r"… ([\d,]+) more characters", shown)
    assert hidden is not None
    assert len(command) - 20_000 < int(hidden.group(1).replace(",", "")) < len(command)


def test_a_long_answer_streams_in_linear_time() -> None:
    """Each delta re-laid the whole open paragraph out as Markdown for the live region: 150 KB took
    30 s in the REPL, 1 MB a quarter of an hour."""
    out = io.StringIO()
    renderer = Renderer(terminal_console(out))
    renderer.begin_turn()
    try:
        answer = "word " * (MB // 5)
        within(
            20, [answer[i : i + DELTA] for i in range(0, MB, DELTA)], lambda d: renderer.handle(TextDelta(d))
        )
        thinking = "think " * (MB // 6)
        within(
            20,
            [thinking[i : i + DELTA] for i in range(0, MB, DELTA)],
            lambda d: renderer.handle(ReasoningDelta(d)),
        )
        renderer.handle(TurnFinished(True, "done"))
    finally:
        renderer.end_turn()
    assert out.getvalue().count("word") >= MB // 5


def test_a_long_answer_streamed_by_p_to_a_terminal_takes_linear_time() -> None:
    """`-p` kept what it streamed as `segment += delta`: 1 MB took 12 s (19 s in a pty), 4 MB minutes."""
    out = io.StringIO()
    printer = _AnswerPrinter(out, stream=True)
    size = 4 * MB
    answer = "word " * (size // 5)
    pieces = [answer[i : i + DELTA] for i in range(0, size, DELTA)]
    within(10, pieces, lambda d: printer.handle(TextDelta(d)))
    printer.handle(TurnFinished(True, "done", answer=answer))
    assert out.getvalue() == answer + "\n"  # what streamed was the answer: not printed twice


def test_p_survives_a_lone_surrogate_in_the_reply(fake_server: FakeServer, tmp_path: Path) -> None:
    """A JSON `"\\ud800"` in a reply ended `-p` with `internal error: UnicodeEncodeError`, the answer
    lost, piped or as --json."""
    for flags in ((), ("--json",)):
        fake_server.push_text("before \ud800 after")
        done = run_nanohermes(fake_server, tmp_path, "--no-memory", "-p", "hi", *flags, key="k")
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)["answer"] if flags else done.stdout
        assert answer.strip() == "before \ufffd after"


def test_mcp_list_shows_escape_sequences_in_a_servers_tool_descriptions_as_text(tmp_path: Path) -> None:
    """`nanohermes mcp list` printed the server's description raw: OSC 52 wrote the clipboard and
    `\\x1b[2J` cleared the screen."""
    config = tmp_path / "config.toml"
    args = json.dumps([str(ESCAPE_SERVER)])
    config.write_text(f"[mcp_servers.esc]\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n")
    done = run_nanohermes(None, tmp_path, "mcp", "list", "--config", str(config), timeout=90)
    assert done.returncode == 0, done.stderr
    assert "mcp__esc__echo" in done.stdout
    for raw in ("\x1b", "\x07", "\x9b"):
        assert raw not in done.stdout
    assert "Echo\\x1b]52;c;ZXZpbA==\\x07 text\\x1b[2J back hidden \\x9b1A" in done.stdout  # CR: a space


def test_the_repl_console_shows_control_characters_a_caller_forgot_but_keeps_its_colours() -> None:
    """The REPL's console is the net under every output path: text cannot carry a control character
    to the terminal, while rich's own styles, CJK, emoji sequences and tabs are untouched."""
    out = io.StringIO()
    console = safe_console(file=out, width=100, force_terminal=True, color_system="truecolor")
    console.print(Text("name a\x1b]0;PWNED\x07b\x9b2J \ud800 \u202etxt", style="bold red"))
    console.print(Text("中文 👩‍👩‍👧 a\tb", style="green"))
    text = out.getvalue()
    assert "\x1b]" not in text
    assert "\x9b" not in text
    assert "\u202e" not in text
    assert "a\\x1b]0;PWNEDb\\x9b2J \\ud800 \\u202etxt" in text  # rich itself drops the BEL
    assert "\x1b[1;31m" in text  # bold red, as rich wrote it
    assert "中文 👩‍👩‍👧 a" in text
    assert "\x1b[32m" in text


def test_a_link_that_is_its_own_address_is_shown_once() -> None:
    """Shown as `text (address)`, `<https://x.y/a>` printed its address twice; a link whose text is
    not its address still shows both."""
    out = io.StringIO()
    renderer = Renderer(terminal_console(out))
    renderer.handle(
        TextDelta("See <https://x.y/a>, [https://p.q](https://p.q), <a@b.c> and [docs](https://u.v).\n\n")
    )
    renderer.end_turn()
    text = " ".join(SGR.sub("", out.getvalue()).split())
    assert "See https://x.y/a, https://p.q, a@b.c and docs (https://u.v)." in text
