"""`nanohermes memory ACTION` (SPEC §1, §3.9, §3.10); the REPL's `/memory` runs the same actions."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.markup import escape as escape_markup
from rich.table import Table

from nanohermes.config.options import MemoryArgs
from nanohermes.config.settings import Settings
from nanohermes.core.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, MemoryRejected, StoreError, ToolError
from nanohermes.core.types import plural
from nanohermes.memory import K1, B, Entry, Kind, MemoryStore, project_key, resolve_id
from nanohermes.ui.memory_transfer import BadArgument, export_memories, import_file
from nanohermes.ui.safe_text import echoed, say, terminal_safe

SEARCH_LIMIT = 10
MAX_LINE_CHARS = 240
"""A note or error stays about one line on the screen."""

Action = Callable[[Console, MemoryStore, MemoryArgs, str], None]
"""One action: prints to the console; raises BadArgument (a user mistake) or StoreError."""


def escape(text: str) -> str:
    """Markup-escaped and safe for the terminal: a memory's text may hold escape sequences."""
    return escape_markup(terminal_safe(text))


def run_memory_command(args: MemoryArgs, settings: Settings, console: Console | None = None) -> int:
    """Run one memory action; returns the exit code."""
    out = console or Console(highlight=False, soft_wrap=False)
    secret = settings.api_key_value()
    store = MemoryStore(
        settings.memory_dir,
        max_entries=settings.memory_max_entries,
        on_notice=lambda message: say(f"note: {message}", MAX_LINE_CHARS),
        secrets=(secret,) if secret else (),
        project=project_key(Path.cwd()),
    )
    action = ACTIONS.get(args.action)
    if action is None:
        names = ", ".join(ACTIONS)
        return _error(f"unknown memory action {args.action!r}; use one of {names}", EXIT_USAGE)
    try:
        action(out, store, args, settings.language)
    except BadArgument as err:
        return _error(str(err), EXIT_USAGE)
    except StoreError as err:
        return _error(err.one_line(), EXIT_FAILURE)
    return EXIT_OK


def _error(message: str, code: int) -> int:
    say(f"error: {message}", MAX_LINE_CHARS)
    return code


def _when(ts: int) -> str:
    if ts <= 0:
        return "-"
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))
    except (OverflowError, ValueError, OSError):  # a hand-edited ts past what the clock can show
        return "?"


def scope_label(entry: Entry, project: str | None) -> str:
    """`global`, `this project` (when `project` is the entry's), or the entry's project key."""
    if entry.project is None:
        return "global"
    return "this project" if entry.project == project else entry.project


def _list(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    entries = store.load() if args.all_projects else store.visible()
    hidden = len(store) - len(entries)
    if not entries:
        more = f"; {hidden} in other projects (--all shows them)" if hidden else ""
        out.print(f"No memories yet ({escape(str(store.path))}){more}.")
        return
    where = "every project" if args.all_projects else f"global + {store.project}"
    title = f"{plural(len(entries), 'memory')} ({escape(where)}) — {escape(str(store.path))}"
    table = Table(title=title, title_justify="left")
    for column, style in (
        ("id", "cyan"),
        ("kind", ""),
        ("scope", "dim"),
        ("source", "dim"),
        ("saved", "dim"),
    ):
        table.add_column(column, no_wrap=column != "scope", overflow="fold", style=style)
    table.add_column("text", overflow="fold")
    for entry in entries:
        table.add_row(
            escape(entry.id),
            entry.kind.label(lang),
            escape(scope_label(entry, store.project)),
            escape(entry.source),
            _when(entry.ts),
            escape(entry.text),
        )
    out.print(table)
    if hidden:
        out.print(f"{hidden} more in other projects (memory list --all).", style="dim")


def _search(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    query = args.argument.strip()
    if not query:
        raise BadArgument("memory search needs a query, e.g. nanohermes memory search deploy")
    if args.all_projects:
        store = store.for_project(None)
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
            str(rank), f"{score:.3f}", escape(entry.id), entry.kind.label(lang), scope, escape(entry.text)
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


def _forget(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    """By id, or by a unique id prefix of 4+ characters; any project's: the user names it on purpose."""
    wanted = args.argument
    if not wanted.strip():
        raise BadArgument("memory forget needs an id (memory list shows them)")
    try:
        entry = store.get(resolve_id(store, wanted, "memory list --all shows the ids", everywhere=True))
    except ToolError as err:
        raise BadArgument(str(err)) from None
    if entry is None or not store.forget(entry.id):  # removed by another process in between
        raise BadArgument(f"no memory with id {echoed(wanted.strip())} (memory list shows the ids)")
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
    table.add_row("  scopes", escape(_scope_counts(store)))
    for kind in Kind:
        table.add_row(f"  {kind.label(lang)}", str(stats.per_kind[kind]))
    sources = ", ".join(f"{escape(name)} {count}" for name, count in stats.per_source.items()) or "-"
    table.add_row("sources", sources)
    table.add_row("oldest", _when(stats.oldest_ts or 0))
    table.add_row("newest", _when(stats.newest_ts or 0))
    out.print(table)


def _scope_counts(store: MemoryStore) -> str:
    """How many memories are global, this project's and other projects'."""
    entries = store.load()
    mine = sum(entry.project is not None and entry.project == store.project for entry in entries)
    shared = sum(entry.project is None for entry in entries)
    return f"global {shared}, this project {mine}, other projects {len(entries) - mine - shared}"


def _path(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    print(store.path)  # plain, for scripts: $(nanohermes memory path)


def _add(out: Console, store: MemoryStore, args: MemoryArgs, lang: str) -> None:
    """`memory add KIND TEXT [--project]`: source `user`; global unless --project. Says the id and
    scope of the new entry, or of the one it merged into."""
    kind = Kind.parse(args.kind)
    if kind is None:
        raise BadArgument(
            f"unknown memory kind {echoed(args.kind)}; use preference, correction, lesson or fact"
        )
    try:
        added = store.remember(
            kind, args.argument, source="user", scope="project" if args.project else "global"
        )
    except MemoryRejected as err:
        raise BadArgument(err.one_line()) from None
    entry = store.get(store.last_id or "")
    where = escape(scope_label(entry, store.project)) if entry is not None else "?"
    ident = escape(entry.id) if entry is not None else "?"
    if added:
        count = len(store.visible())
        out.print(f"Saved {ident} ({kind.value}, {where}); {plural(count, 'memory')} here.")
    else:
        out.print(f"Duplicate of {ident} ({where}), merged; nothing added.")


ACTIONS: dict[str, Action] = {
    "list": _list,
    "search": _search,
    "forget": _forget,
    "stats": _stats,
    "path": _path,
    "add": _add,
    "export": export_memories,
    "import": import_file,
}
