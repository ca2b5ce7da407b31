"""The prompt_toolkit input line: history, multi-line keys, completion, bottom toolbar, Ctrl-C rules."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.output import Output

from nanohermes.core.fileio import ensure_private_dir
from nanohermes.ui.safe_text import terminal_safe

PROMPT = "❯ "
CONTINUATION = "· "
EXIT_WINDOW_SECONDS = 2.0
MAX_PATH_COMPLETIONS = 200


class ExitRequested(Exception):
    """Ctrl-C twice on an empty line: leave the REPL (like Ctrl-D)."""


class ExitWindow:
    """Ctrl-C on an empty line opens a 2 s window in which a second one exits; a new prompt closes it."""

    def __init__(self) -> None:
        self.opened_at: float | None = None

    def close(self) -> None:
        self.opened_at = None

    def is_open(self) -> bool:
        return self.opened_at is not None and time.monotonic() - self.opened_at <= EXIT_WINDOW_SECONDS


class ReplCompleter(Completer):
    """Slash commands (and their fixed arguments) at the start of the line; paths after `@`."""

    def __init__(self, commands: Iterable[str], arguments: dict[str, tuple[str, ...]], root: Path) -> None:
        self.commands = sorted(commands)
        self.arguments = arguments
        self.root = root

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and "\n" not in before:
            yield from self._command_completions(before)
            return
        word = before.split()[-1] if before and not before[-1].isspace() else ""
        if word.startswith("@"):
            yield from self._path_completions(word[1:])

    def _command_completions(self, before: str) -> Iterable[Completion]:
        name, space, rest = before.partition(" ")
        if not space:
            for command in self.commands:
                if command.startswith(name):
                    yield Completion(command, start_position=-len(name))
            return
        if " " in rest.strip():
            return
        for choice in self.arguments.get(name, ()):
            if choice.startswith(rest.strip()):
                yield Completion(choice, start_position=-len(rest.lstrip()))

    def _path_completions(self, typed: str) -> Iterable[Completion]:
        directory, _, prefix = typed.rpartition("/")
        base = Path(os.path.expanduser(directory)) if directory else Path()
        folder = base if base.is_absolute() else self.root / base
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        dotted = prefix.startswith(".")  # hidden entries only when asked for
        matches = (e for e in entries if e.name.startswith(prefix) and (dotted or e.name[:1] != "."))
        for entry in itertools.islice(matches, MAX_PATH_COMPLETIONS):
            name = entry.name + ("/" if entry.is_dir() else "")
            # shown safe: a file name may hold escape sequences or a bidi override (`a\u202eb`
            # would show reordered); inserted as it is, so the path still names the file
            yield Completion(name, start_position=-len(prefix), display=terminal_safe(name))


def key_bindings(window: ExitWindow) -> KeyBindings:
    """Esc Enter / Alt+Enter insert a newline; Ctrl-C clears the line, or twice on an empty one exits."""
    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add(Keys.Vt100MouseEvent)
    def _not_a_mouse(event: KeyPressEvent) -> None:
        # mouse support is off: this is a colour code pasted without bracketed paste (`ESC[31m`), on
        # which prompt_toolkit's mouse parser crashed; kept as text, as other unknown sequences are
        event.current_buffer.insert_text(event.data[1:])

    @bindings.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        if event.current_buffer.text:
            event.current_buffer.reset()
            window.close()
        elif window.is_open():
            event.app.exit(exception=ExitRequested())
        else:
            window.opened_at = time.monotonic()  # the toolbar says "Ctrl-C again to exit" meanwhile

    return bindings


class RedactingHistory(FileHistory):
    """The input history file minus secrets; up-arrow in this session still recalls what was typed."""

    def __init__(self, path: Path, secrets: Iterable[str] = ()) -> None:
        super().__init__(str(path))
        self.secrets = tuple(secrets)

    def store_string(self, string: str) -> None:
        from nanohermes.memory import redact

        super().store_string(redact(string, self.secrets))


def make_session(
    history_file: Path,
    completer: Completer,
    toolbar: Callable[[], FormattedText],
    bindings: KeyBindings,
    *,
    input: Input | None = None,  # noqa: A002 - prompt_toolkit's name; tests pass a pipe
    output: Output | None = None,
    secrets: Iterable[str] = (),
) -> PromptSession[str]:
    ensure_private_dir(history_file.parent)
    history_file.touch(mode=0o600, exist_ok=True)  # what you type is private, like sessions
    return PromptSession(
        input=input,
        output=output,
        history=RedactingHistory(history_file, secrets),
        completer=completer,
        complete_while_typing=True,
        bottom_toolbar=toolbar,
        key_bindings=bindings,
        prompt_continuation=lambda width, line_number, wrap_count: CONTINUATION.rjust(width),
    )


def sandbox_label(active: bool, network: bool, mode: str) -> str:
    """The bottom bar's word for the shell sandbox."""
    if active:
        return "sandboxed" if not network else "sandboxed+net"
    return "shell refused" if mode == "bwrap" else "no sandbox"


def toolbar_text(
    model: str, permission: str, session: str, fill_percent: int, hint: str = "", sandbox: str = ""
) -> FormattedText:
    fields = [model, permission, *([sandbox] if sandbox else []), session]
    style = "class:bottom-toolbar.warn" if fill_percent >= 80 else ""
    parts = [("", f" {' │ '.join(fields)} │ "), (style, f"context {fill_percent}% ")]
    if hint:
        parts.append(("bold", f"│ {hint} "))
    return FormattedText(parts)
