"""`nanohermes memory add | export | import` (SPEC §3.10): memories typed, carried and read back by hand."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from nanohermes.errors import MemoryRejected
from nanohermes.memory import Entry, Kind, MemoryStore
from nanohermes.memory.transfer import export_markdown, import_memories, parse_import
from nanohermes.types import plural
from nanohermes.ui.safe_text import terminal_safe

if TYPE_CHECKING:
    from rich.console import Console

    from nanohermes.options import MemoryArgs

MAX_IMPORT_BYTES = 16 << 20


class BadArgument(Exception):
    """A user mistake on the command line: one line, exit 2."""


def scope_label(entry: Entry, project: str | None) -> str:
    """`global`, `this project` (when `project` is the entry's), or the entry's project key."""
    if entry.project is None:
        return "global"
    return "this project" if entry.project == project else entry.project


def add_memory(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    """`memory add KIND TEXT [--project]`: source `user`; global unless --project."""
    kind = Kind.parse(args.kind)
    if kind is None:
        raise BadArgument(f"unknown memory kind {args.kind!r}; use preference, correction, lesson or fact")
    scope = "project" if args.project else "global"
    try:
        added = store.remember(kind, args.argument, source="user", scope=scope)
    except MemoryRejected as err:
        raise BadArgument(err.one_line()) from None
    out.print(saved_line(store, kind, added))


def saved_line(store: MemoryStore, kind: Kind, added: bool) -> str:
    """What `add` says: the id and scope of the new entry, or of the one it merged into."""
    entry = store.get(store.last_id or "")
    where = escape(scope_label(entry, store.project)) if entry is not None else "?"
    ident = escape(entry.id) if entry is not None else "?"
    if added:
        count = len(store.visible())
        return f"Saved {ident} ({kind.value}, {where}); {count} memor{'y' if count == 1 else 'ies'} here."
    return f"Duplicate of {ident} ({where}), merged; nothing added."


def export_memories(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    """`memory export`: every memory of every project, as Markdown on stdout. A file gets the texts as
    stored; a terminal sees an escape sequence an older memory.json may hold as text, not obeyed."""
    text = export_markdown(store.load(), str(store.path))
    sys.stdout.write(terminal_safe(text) if sys.stdout.isatty() else text)
    sys.stdout.flush()


def import_file(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    """`memory import FILE`: a Markdown export or a JSON list, each memory through `remember`."""
    try:
        items = parse_import(_read_import(args.argument))
    except MemoryRejected as err:  # nothing is imported from a file that does not parse
        raise BadArgument(f"{args.argument}: {err.one_line()}; nothing imported") from None
    result = import_memories(store, items)
    for line in result.refused:
        print(f"nanohermes: note: not imported: {' '.join(line.split())}", file=sys.stderr)
    out.print(
        f"Imported {plural(result.added, 'new memory', 'new memories')} from {escape(args.argument)}; "
        f"{result.merged} {'was' if result.merged == 1 else 'were'} already known (merged)"
        + (f"; {len(result.refused)} refused" if result.refused else "")
        + "."
    )


def _read_import(name: str) -> str:
    if not name.strip():
        raise BadArgument("memory import needs a file (a memory export, Markdown or JSON)")
    if name == "-":
        return sys.stdin.read()
    path = Path(name).expanduser()
    try:
        if not path.is_file():  # never open a FIFO or a device: it could block or never end
            raise BadArgument(f"{name} is not a file (give a memory export, Markdown or JSON)")
        if path.stat().st_size > MAX_IMPORT_BYTES:
            raise BadArgument(f"{name} is larger than {MAX_IMPORT_BYTES >> 20} MiB; not a memory export")
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise BadArgument(f"{name} is not UTF-8 text (give a memory export, Markdown or JSON)") from None
    except OSError as err:
        raise BadArgument(f"cannot read {name}: {err.strerror or err}") from None
