"""`nanohermes memory export | import` (SPEC §3.10): memories carried to another machine and read back."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from rich.markup import escape

from nanohermes.core.errors import MemoryRejected
from nanohermes.core.types import plural
from nanohermes.memory import MemoryStore
from nanohermes.memory.transfer import export_markdown, import_memories, parse_import
from nanohermes.ui.safe_text import say, terminal_safe

if TYPE_CHECKING:
    from rich.console import Console

    from nanohermes.config.options import MemoryArgs

MAX_IMPORT_BYTES = 16 << 20


class BadArgument(Exception):
    """A user mistake on the command line: one line, exit 2."""


def export_memories(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    """`memory export`: every memory of every project, as Markdown on stdout. A file gets the texts as
    stored; a terminal sees an escape sequence an older memory.json may hold as text, not obeyed."""
    text = export_markdown(store.load(), str(store.path))
    sys.stdout.write(terminal_safe(text) if sys.stdout.isatty() else text)
    sys.stdout.flush()


def import_file(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    """`memory import FILE`: a Markdown export or a JSON list, each memory through `remember`."""
    name = terminal_safe(args.argument)  # a file name may hold escape sequences
    try:
        items = parse_import(_read_import(args.argument))
    except MemoryRejected as err:  # nothing is imported from a file that does not parse
        raise BadArgument(f"{name}: {err.one_line()}; nothing imported") from None
    if len(items) > store.max_entries:  # the cap would evict every memory there is, and most of these
        raise BadArgument(
            f"{name} holds {len(items):,} memories, more than memory_max_entries ({store.max_entries:,}); "
            "nothing imported (raise the setting or split the file)"
        )
    before = len(store.load())
    result = import_memories(store, items)
    for line in result.refused:
        say(f"note: not imported: {line}")
    evicted = before + result.added - len(store.load())
    out.print(
        f"Imported {plural(result.added, 'new memory', 'new memories')} from {escape(name)}; "
        f"{result.merged} {'was' if result.merged == 1 else 'were'} already known (merged)"
        + (f"; {len(result.refused)} refused" if result.refused else "")
        + (f"; {plural(evicted, 'memory')} evicted at the cap (memory_max_entries)" if evicted > 0 else "")
        + "."
    )


def _read_import(name: str) -> str:
    if not name.strip():
        raise BadArgument("memory import needs a file (a memory export, Markdown or JSON)")
    if name == "-":
        return _bounded_text(sys.stdin.buffer, "standard input")
    path = Path(name).expanduser()
    shown = terminal_safe(name)
    try:
        if not path.exists():
            raise BadArgument(f"{shown}: no such file")
        if not path.is_file():  # never open a FIFO or a device: it could block or never end
            raise BadArgument(f"{shown} is not a file (give a memory export, Markdown or JSON)")
        with path.open("rb") as stream:  # bounded: the file may grow after a size check
            return _bounded_text(stream, shown)
    except OSError as err:
        raise BadArgument(f"cannot read {shown}: {err.strerror or err}") from None


def _bounded_text(stream: BinaryIO, shown: str) -> str:
    """At most MAX_IMPORT_BYTES of `stream`, as UTF-8: a pipe from /dev/zero never fills memory."""
    data = stream.read(MAX_IMPORT_BYTES + 1)
    if len(data) > MAX_IMPORT_BYTES:
        raise BadArgument(f"{shown} is larger than {MAX_IMPORT_BYTES >> 20} MiB; not a memory export")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadArgument(f"{shown} is not UTF-8 text (give a memory export, Markdown or JSON)") from None
