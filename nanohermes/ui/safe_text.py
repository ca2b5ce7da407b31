"""Text from a model, a tool or a workspace file, made safe to print on a terminal.

rich passes ESC and the C1 controls through, so a reply or a diff could move the cursor, erase a
line, retitle the window, write the clipboard (OSC 52) — and hide an approval's real command behind
a harmless one; bidi overrides and isolates reorder what is shown ("Trojan Source"); a lone surrogate
cannot be encoded at all (UnicodeEncodeError would end the REPL). Each is shown as a visible escape
(`\\x1b`, `\\u202e`, `\\ud800`) instead; newlines, tabs and the CR of a CRLF line end are kept.
"""

from __future__ import annotations

import codecs
import re
import sys
from typing import TextIO

_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]|\r(?!\n)")


def terminal_safe(text: str) -> str:
    """`text` with every character a terminal would act on, instead of show, made visible."""
    return _UNSAFE.sub(_visible, text)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


ECHO_CHARS = 60  # of a user's argument repeated in an error: a pasted one may be a screenful


def echoed(argument: str) -> str:
    """`argument` quoted (`repr` escapes control, bidi and surrogate characters), cut to ECHO_CHARS."""
    if len(argument) <= ECHO_CHARS:
        return repr(argument)
    return f"{argument[:ECHO_CHARS]!r}… ({len(argument):,} characters)"


def is_terminal(stream: TextIO | None) -> bool:
    """False for None, a closed stream or a test's StringIO."""
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        return False


def speaks_utf8(stream: TextIO) -> bool:
    """False under `LANG=en_US.ISO-8859-1` or `PYTHONIOENCODING=ascii`."""
    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "utf-8").name == "utf-8"
    except LookupError:
        return False


def one_line(text: str, limit: int = 0) -> str:
    """`text` on one line and terminal-safe; over `limit`, its start and its end (where a hint is)."""
    line = terminal_safe(" ".join(text.split()))
    if not limit or len(line) <= limit:
        return line
    return f"{line[: limit // 2]} … {line[-(limit // 2) :]}"


def say(text: str, limit: int = 0) -> None:
    """One line on stderr, apart from what a command prints on stdout."""
    print(f"nanohermes: {one_line(text, limit)}", file=sys.stderr, flush=True)


def fail(message: str, code: int, limit: int = 0) -> int:
    """`error: message` on stderr; returns the exit code `code`."""
    say(f"error: {message}", limit)
    return code
