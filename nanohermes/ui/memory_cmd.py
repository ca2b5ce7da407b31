"""`nanohermes memory ACTION` (SPEC §1, §3.9, §3.10); the REPL's `/memory` runs the same actions."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from rich.console import Console
from rich.markup import escape as escape_markup
from rich.table import Table

from nanohermes.config.options import MemoryArgs
from nanohermes.config.settings import Settings
from nanohermes.core.errors import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    ConfigError,
    MemoryRejected,
    StoreError,
    ToolError,
)
from nanohermes.core.types import plural
from nanohermes.memory import K1, B, Entry, Kind, MemoryStore, resolve_id, workspace_store
from nanohermes.memory.transfer import export_markdown, import_memories, parse_import
from nanohermes.ui.safe_text import echoed, fail, say, terminal_safe

SEARCH_LIMIT = 10
DAY = 86_400
MAX_LINE_CHARS = 240  # a note or error stays about one line on the screen
MAX_IMPORT_BYTES = 16 << 20

Action = Callable[[Console, MemoryStore, MemoryArgs, str], None]  # raises ConfigError or StoreError


def escape(text: str) -> str:
    """Markup-escaped and safe for the terminal: a memory's text may hold escape sequences."""
    return escape_markup(terminal_safe(text))


def run_memory_command(args: MemoryArgs, settings: Settings, console: Console | None = None) -> int:
    out = console or Console(highlight=False, soft_wrap=False)
    secret = settings.api_key_value()
    store = workspace_store(
        settings.memory_dir,
        Path.cwd(),
        max_entries=settings.memory_max_entries,
        on_notice=lambda message: say(f"note: {message}", MAX_LINE_CHARS),
        secrets=(secret,) if secret else (),
    )
    try:  # (argparse refused any other action)
        ACTIONS[args.action](out, store, args, settings.language)
    except (ConfigError, MemoryRejected) as err:  # a refused text is the user's to change
        return fail(err.one_line(), EXIT_USAGE, MAX_LINE_CHARS)
    except StoreError as err:
        return fail(err.one_line(), EXIT_FAILURE, MAX_LINE_CHARS)
    return EXIT_OK


def _when(ts: int) -> str:
    if ts <= 0:
        return "-"
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))
    except (OverflowError, ValueError, OSError):  # a hand-edited ts past what the clock can show
        return "?"


def scope_label(entry: Entry, project: str | None) -> str:
    if entry.team or entry.project is None:
        return "team" if entry.team else "global"
    return "this project" if entry.project == project else entry.project


def _text(entry: Entry) -> str:
    if not entry.superseded_by:
        return escape(entry.text)
    replaced = f"replaced by {escape(entry.superseded_by)} {_when(entry.superseded_ts)}"
    return f"{escape(entry.text)} [dim]({replaced})[/dim]"


def _list(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    """This project's and the global memories (every project's with --all), then the team's."""
    every = store.for_project(None, history=args.history).visible()
    entries = every if args.all_projects else store.for_project(store.project, history=args.history).visible()
    hidden = len(every) - len(entries)
    entries += [e for e in store.team.load() if args.history or not e.superseded_by] if store.team else []
    if args.stale is not None:
        if args.stale < 0:
            raise ConfigError(f"--stale needs a number of days, not {args.stale}")
        entries = [e for e in entries if max(e.used_ts, e.ts) < time.time() - args.stale * DAY]
    if not entries:
        more = f"; {hidden} in other projects (--all shows them)" if hidden else ""
        what = "No memories yet" if args.stale is None else f"No memories unused for {args.stale} days"
        out.print(f"{what} ({escape(str(store.path))}){more}.")
        return
    where = "every project" if args.all_projects else f"global + {store.project}"
    title = f"{plural(len(entries), 'memory')} ({escape(where)}) — {escape(str(store.path))}"
    table = Table(title=title, title_justify="left")
    used = ["used"] if args.stale is not None else []  # (a narrow terminal has no room for it else)
    for column in ("id", "kind", "scope", "source", "saved", *used, "text"):
        style = "cyan" if column == "id" else "" if column in ("kind", "text") else "dim"
        table.add_column(column, no_wrap=column not in ("scope", "text"), overflow="fold", style=style)
    for e in entries:
        last = [f"{e.uses}× {_when(e.used_ts)}" if e.uses else "never"] if used else []
        scope, source = escape(scope_label(e, store.project)), escape(e.source)
        table.add_row(escape(e.id), e.kind.label(lang), scope, source, _when(e.ts), *last, _text(e))
    out.print(table)
    if hidden:
        out.print(f"{hidden} more in other projects (memory list --all).", style="dim")


def _search(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    query = args.argument.strip()
    if not query:
        raise ConfigError("memory search needs a query, e.g. nanohermes memory search deploy")
    if args.all_projects or args.history:
        store = store.for_project(None if args.all_projects else store.project, history=args.history)
    hits = store.search(query, top_k=SEARCH_LIMIT)
    asked = escape_markup(echoed(query))  # cut: a pasted query may be 100,000 characters
    if not hits:
        hint = "" if args.all_projects or store.project is None else " (--all searches every project)"
        out.print(f"No matching memories for {asked}{hint}.")
        return
    table = Table(title=f"{plural(len(hits), 'best match')} for {asked}", title_justify="left")
    for column in ("#", "score", "id", "kind", "scope", "text"):
        table.add_column(column, no_wrap=column not in ("text", "scope"), overflow="fold")
    for rank, (score, entry) in enumerate(hits, start=1):
        scope = escape(scope_label(entry, None if args.all_projects else store.project))
        table.add_row(
            str(rank), f"{score:.3f}", escape(entry.id), entry.kind.label(lang), scope, _text(entry)
        )
    out.print(table)
    if args.explain:
        for rank, (score, entry) in enumerate(hits, start=1):
            _explain(out, store, query, entry, rank, score)


def _explain(out: Console, store: MemoryStore, query: str, entry: Entry, rank: int, score: float) -> None:
    why = store.explain(query, entry)
    out.print()
    out.print(
        f"[bold]#{rank} {escape(entry.id)}[/bold]  score {score:.4f} = sum of the term contributions "
        f"(BM25F k1={K1} b={B}; document length {why.doc_len} tokens, average {why.avgdl:.1f}, "
        f"{plural(why.n_docs, 'memory')})"
    )
    table = Table(show_edge=False)
    for column in ("term", "tf", "df", "idf", "contribution"):
        table.add_column(column, justify="left" if column == "term" else "right")
    for part in why.terms:
        table.add_row(
            escape(part.display), str(part.tf), str(part.df), f"{part.idf:.4f}", f"{part.contribution:.4f}"
        )
    out.print(table)


def _find(store: MemoryStore, wanted: str) -> Entry:
    """By id, or by a unique id prefix of 4+ characters; any project's: the user names it on purpose."""
    try:
        entry = store.get(resolve_id(store, wanted, "memory list --all shows the ids", everywhere=True))
    except ToolError as err:
        raise ConfigError(err.one_line()) from None
    if entry is None:  # removed by another process in between
        raise ConfigError(f"no memory with id {echoed(wanted.strip())} (memory list shows the ids)")
    return entry


def _forget(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    if not args.argument.strip():
        raise ConfigError("memory forget needs an id (memory list shows them)")
    entry = _find(store, args.argument)
    store.forget(entry.id)  # False: another process forgot it first; it is gone all the same
    out.print(f"Forgot {escape(entry.id)} [{escape(entry.kind.label(lang))}] {escape(entry.text)}")
    out.print(f"{plural(len(store), 'memory')} left.", style="dim")


def _stats(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    stats = store.stats()
    table = Table(show_header=False, title="Long-term memory", title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_row("file", escape(str(stats.path)) + ("" if stats.exists else " (not created yet)"))
    table.add_row("size", f"{stats.size_bytes:,} bytes")
    table.add_row("memories", f"{stats.total} of at most {stats.max_entries}")
    entries, recent = store.load(), time.time() - 30 * DAY
    mine = sum(entry.project is not None and entry.project == store.project for entry in entries)
    shared = sum(entry.project is None for entry in entries)
    others = len(entries) - mine - shared
    table.add_row("  scopes", escape(f"global {shared}, this project {mine}, other projects {others}"))
    table.add_row("  replaced", f"{sum(bool(e.superseded_by) for e in entries)} (kept as history)")
    never, lately = sum(not e.used_ts for e in entries), sum(e.used_ts >= recent for e in entries)
    table.add_row(
        "  used", f"never {never}, in the last 30 days {lately}, before {len(entries) - never - lately}"
    )
    if store.team is not None:
        table.add_row("team", f"{len(store.team.visible())} in {escape(str(store.team.path))}")
    for kind in Kind:
        table.add_row(f"  {kind.label(lang)}", str(stats.per_kind[kind]))
    sources = ", ".join(f"{escape(name)} {count}" for name, count in stats.per_source.items()) or "-"
    table.add_row("sources", sources)
    table.add_row("oldest", _when(stats.oldest_ts or 0))
    table.add_row("newest", _when(stats.newest_ts or 0))
    out.print(table)


def _path(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    print(store.path)  # plain, for scripts: $(nanohermes memory path)


def _add(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    """`memory add KIND TEXT [--project | --team]`; says the new entry's id, or the one it merged into."""
    kind = Kind.parse(args.kind)
    if kind is None:
        raise ConfigError(
            f"unknown memory kind {echoed(args.kind)}; use preference, correction, lesson or fact"
        )
    target = store.team if args.team else store
    if target is None:
        raise ConfigError(
            "--team needs a git repository (the team memory is <top level>/.nanohermes/memory.json)"
        )
    added = target.remember(kind, args.argument, source="user", scope="project" if args.project else "global")
    entry = target.get(target.last_id or "")
    where = escape(scope_label(entry, store.project)) if entry is not None else "?"
    ident = escape(entry.id) if entry is not None else "?"
    if added:
        out.print(f"Saved {ident} ({kind.value}, {where}); {plural(len(store.visible()), 'memory')} here.")
    else:
        out.print(f"Duplicate of {ident} ({where}), merged; nothing added.")


def _replace(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    """`memory replace ID TEXT`: ID (any project's, or the team's) stays in the file as history."""
    target = store.for_project(None)
    if store.team is not None and not target.matching_ids(args.target, everywhere=True):
        target = store.team
    old = _find(target, args.target)
    target.remember(old.kind, args.argument, source="user", replaces=old.id)
    new = escape(target.last_id or "?")
    out.print(f"Replaced {escape(old.id)} by {new}; the old one is kept (memory list --history).")


def export_memories(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    """`memory export`: every memory, as Markdown on stdout; made terminal-safe only for a terminal."""
    text = export_markdown(store.load(), str(store.path))
    sys.stdout.write(terminal_safe(text) if sys.stdout.isatty() else text)
    sys.stdout.flush()


def import_file(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    """`memory import FILE`: a Markdown export or a JSON list, each memory through `remember`."""
    name = terminal_safe(args.argument)  # a file name may hold escape sequences
    try:
        items = parse_import(_read_import(args.argument))
    except MemoryRejected as err:  # nothing is imported from a file that does not parse
        raise ConfigError(f"{name}: {err.one_line()}; nothing imported") from None
    if len(items) > store.max_entries:  # the cap would evict every memory there is, and most of these
        raise ConfigError(
            f"{name} holds {len(items):,} memories, more than memory_max_entries ({store.max_entries:,}); "
            "nothing imported (raise the setting or split the file)"
        )
    before = len(store.load())
    result = import_memories(store, items)
    for line in result.refused:
        say(f"note: not imported: {line}")
    evicted = before + result.added - len(store.load())
    out.print(
        f"Imported {plural(result.added, 'new memory')} from {escape_markup(name)}; "
        f"{result.merged} {'was' if result.merged == 1 else 'were'} already known (merged)"
        + (f"; {len(result.refused)} refused" if result.refused else "")
        + (f"; {plural(evicted, 'memory')} evicted at the cap (memory_max_entries)" if evicted > 0 else "")
        + "."
    )


def _read_import(name: str) -> str:
    if not name.strip():
        raise ConfigError("memory import needs a file (a memory export, Markdown or JSON)")
    if name == "-":
        return _bounded_text(sys.stdin.buffer, "standard input")
    path = Path(name).expanduser()
    shown = terminal_safe(name)
    try:
        if not path.exists():
            raise ConfigError(f"{shown}: no such file")
        if not path.is_file():  # never open a FIFO or a device: it could block or never end
            raise ConfigError(f"{shown} is not a file (give a memory export, Markdown or JSON)")
        with path.open("rb") as stream:  # bounded: the file may grow after a size check
            return _bounded_text(stream, shown)
    except OSError as err:
        raise ConfigError(f"cannot read {shown}: {err.strerror or err}") from None


def _bounded_text(stream: BinaryIO, shown: str) -> str:
    """At most MAX_IMPORT_BYTES of `stream`, as UTF-8: a pipe from /dev/zero never fills memory."""
    data = stream.read(MAX_IMPORT_BYTES + 1)
    if len(data) > MAX_IMPORT_BYTES:
        raise ConfigError(f"{shown} is larger than {MAX_IMPORT_BYTES >> 20} MiB; not a memory export")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{shown} is not UTF-8 text (give a memory export, Markdown or JSON)") from None


ACTIONS: dict[str, Action] = {
    "list": _list,
    "search": _search,
    "forget": _forget,
    "stats": _stats,
    "path": _path,
    "add": _add,
    "replace": _replace,
    "export": export_memories,
    "import": import_file,
}
