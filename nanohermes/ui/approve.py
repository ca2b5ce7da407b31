"""Approvals in `ask` mode: show the diff or the command, then read one key: y / n / a(lways).

The worker thread never touches the terminal: it posts a `PendingApproval` to the main thread (which
owns the terminal during a turn) and waits for `answer`; on the main thread it asks directly."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text

from nanohermes.core.errors import Cancelled
from nanohermes.core.protocols import ApprovalRequest, Decision
from nanohermes.ui.safe_text import terminal_safe

if TYPE_CHECKING:
    from prompt_toolkit.input import Input
    from prompt_toolkit.key_binding import KeyPress
    from rich.console import Console

    from nanohermes.core.cancel import CancelToken

KEYS: dict[str, Decision] = {"y": Decision.YES, "n": Decision.NO, "a": Decision.ALWAYS}
QUESTION = "Allow? [y]es / [n]o / [a]lways for this session: "
SHELL_TOOLS = ("run_shell", "shell", "bash")
MAX_DETAIL_LINES = 60
MAX_DETAIL_CHARS = 6000
"""About 60 rows of a 100-column terminal. Unclipped, a one-line 1 MB command printed 10,000 rows and
took seconds to highlight before the question came, its start long scrolled out of sight."""

KeyReader = Callable[[str], str]  # question → the key pressed; raises KeyboardInterrupt on Ctrl-C


class PendingApproval:
    """One question from the worker thread, answered once by the main thread."""

    def __init__(self, request: ApprovalRequest) -> None:
        self.request = request
        self._done = threading.Event()
        self._decision: Decision | None = None

    def resolve(self, decision: Decision | None) -> None:
        """None: interrupted (Ctrl-C while asking, or the turn cancelled), which is not a "no"."""
        if not self._done.is_set():
            self._decision = decision
            self._done.set()

    def wait(self, cancel: CancelToken) -> Decision:
        """Raises `Cancelled` when interrupted: the runner gives this call the interrupted result."""
        while not self._done.wait(0.2):
            if cancel.cancelled:
                self.resolve(None)
        if self._decision is None or cancel.cancelled:
            raise Cancelled()
        return self._decision


class TerminalApprover:
    """The `protocols.Approver` of the REPL."""

    def __init__(self, console: Console, read_key: KeyReader | None = None) -> None:
        self.console = console
        self._read_key = read_key or read_one_key
        # while a turn runs: where to post questions, and its token (one attribute: read without a lock)
        self._turn: tuple[Callable[[PendingApproval], None], CancelToken] | None = None
        self._owner = threading.get_ident()

    def attach(self, post: Callable[[PendingApproval], None], cancel: CancelToken) -> None:
        self._turn = (post, cancel)

    def detach(self) -> None:
        self._turn = None

    def __call__(self, request: ApprovalRequest) -> Decision:
        turn = self._turn
        if threading.get_ident() == self._owner or turn is None:
            return self.ask(request)
        post, cancel = turn
        if cancel.cancelled:
            raise Cancelled()  # never asked: interrupted (SPEC §4.1), not declined
        pending = PendingApproval(request)
        post(pending)
        return pending.wait(cancel)

    def answer(self, pending: PendingApproval) -> Decision:
        """Main thread: ask about a posted request. Ctrl-C interrupts the call, then propagates."""
        try:
            decision = self.ask(pending.request)
        except BaseException as err:
            turn = self._turn
            if isinstance(err, KeyboardInterrupt) and turn is not None:
                # before the worker is released: told "interrupted", it could otherwise send the
                # next model request before the REPL cancels the turn
                turn[1].cancel()
            pending.resolve(None)  # unblock the worker before the error propagates
            raise
        pending.resolve(decision)
        return decision

    def ask(self, request: ApprovalRequest) -> Decision:
        self.show(request)
        try:
            key = self._read_key(QUESTION)
        except KeyboardInterrupt:
            self.console.print(Text("  → no (interrupted)", style="yellow"))
            raise
        decision = KEYS.get(key.lower()[:1], Decision.NO)
        label = decision.value + (" for this session" if decision is Decision.ALWAYS else "")
        self.console.print(Text(f"  → {label}", style="red" if decision is Decision.NO else "green"))
        return decision

    def show(self, request: ApprovalRequest) -> None:
        self.console.print(Text.assemble(("? ", "bold yellow"), (terminal_safe(request.title), "bold")))
        shell = request.tool in SHELL_TOOLS
        detail = terminal_safe(_clip(request.detail, keep_end=shell))
        if not detail.strip():
            return
        from rich.syntax import Syntax  # pygments loads on the first question, not at start-up

        lexer = "bash" if shell else "diff"
        syntax = Syntax(detail, lexer, theme="ansi_dark", word_wrap=True, background_color="default")
        self.console.print(syntax)


def _clip(detail: str, *, keep_end: bool) -> str:
    """`detail` cut to MAX_DETAIL_LINES lines and MAX_DETAIL_CHARS characters, saying how much is not
    shown. `keep_end` (a command): half goes to its end (`echo …1 MB… ; rm -rf ~` must show the `rm`)."""
    text = detail.rstrip("\n")
    lines = text.split("\n")
    if len(lines) <= MAX_DETAIL_LINES and len(text) <= MAX_DETAIL_CHARS:
        return text
    share = 2 if keep_end else 1
    count, budget = MAX_DETAIL_LINES // share, MAX_DETAIL_CHARS // share
    whole_head = "\n".join(lines[:count])
    whole_tail = "\n".join(lines[len(lines) - count :]) if keep_end else ""
    head, tail = whole_head[:budget], whole_tail[-budget:]
    if (head, tail) == (whole_head, whole_tail):  # only whole lines left out
        marker = f"… {len(lines) - 2 * count if keep_end else len(lines) - count} more lines"
    else:
        marker = f"… {len(text) - len(head) - len(tail):,} more characters"
    return "\n".join(part for part in (head, marker, tail) if part)


def read_one_key(question: str) -> str:
    """Ask `question`; the key pressed of y / n / a, Enter, Esc, Ctrl-D (`ask`: the last three mean no)."""
    from prompt_toolkit.application import Application
    from prompt_toolkit.input.typeahead import store_typeahead
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
    from prompt_toolkit.layout import FormattedTextControl, Layout, Window

    bindings = KeyBindings()

    def answer(event: KeyPressEvent) -> None:
        event.app.exit(result=event.data.lower())

    # Ctrl-D: end of input, no one will say yes, so the question must not keep waiting
    for key in [*KEYS, *(key.upper() for key in KEYS), "enter", "escape", "c-d"]:
        bindings.add(key)(answer)

    @bindings.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        event.app.exit(exception=KeyboardInterrupt())

    control = FormattedTextControl([("bold", question)], show_cursor=True)
    app: Application[str] = Application(
        layout=Layout(Window(control, height=1, dont_extend_height=True)),
        key_bindings=bindings,
        full_screen=False,
        erase_when_done=True,
    )
    earlier = _take_pending_keys(app.input)  # typed during the turn, before the question: no answer
    try:
        return app.run()
    finally:
        _take_pending_keys(app.input)  # the rest of «yes⏎» or «no⏎» must not become the next message
        store_typeahead(app.input, earlier)  # what was typed ahead still reaches the next prompt


def _take_pending_keys(source: Input) -> list[KeyPress]:
    """Remove and return the keys typed but not yet handled, the terminal's included (a line typed
    without Enter is readable only outside canonical mode)."""
    from prompt_toolkit.input.typeahead import get_typeahead

    keys = get_typeahead(source)
    with source.raw_mode():
        while batch := source.read_keys():
            keys.extend(batch)
    return [*keys, *source.flush_keys()]
