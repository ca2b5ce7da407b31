"""`/memory` in the REPL (SPEC §3.9, §3.10): list, search, forget, stats, add, last.

Like `nanohermes memory`, lists and searches show the global memories and this project's; `--all`
shows every project's, with its project.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from nanohermes.core.errors import StoreError
from nanohermes.core.types import plural
from nanohermes.ui.safe_text import echoed, terminal_safe

if TYPE_CHECKING:
    from rich.table import Table

    from nanohermes.ui.command_context import CommandContext
    from nanohermes.ui.seams import MemoryEntry, MemoryStoreLike

MIN_ID_PREFIX = 4
"""As `nanohermes.memory.MIN_ID_PREFIX` (not imported here: the REPL loads memory in the background)."""
USAGE = (
    "usage: /memory [list [--all] | search Q [--all] | forget ID | stats | add [--project] KIND TEXT | last]"
)


def run_memory(ctx: CommandContext, store: MemoryStoreLike, arg: str) -> None:
    action, _, rest = arg.strip().partition(" ")
    action = action or "list"
    words = rest.split()
    # only list and search take --all: in `add` it is part of the memory's text
    everywhere = action in ("list", "search") and "--all" in words
    rest = " ".join(word for word in words if word != "--all") if everywhere else rest.strip()
    try:
        _dispatch(ctx, store, action, rest, everywhere)
    except StoreError as err:  # a broken or special memory.json: one line, the REPL goes on
        ctx.fail(err.one_line())


def _dispatch(ctx: CommandContext, store: MemoryStoreLike, action: str, rest: str, everywhere: bool) -> None:
    if action == "list":
        _list(ctx, store, everywhere)
    elif action == "search" and rest:
        _search(ctx, store.for_project(None) if everywhere else store, rest, everywhere)
    elif action == "forget" and rest:
        _forget(ctx, store, rest)
    elif action == "stats":
        _stats(ctx, store)
    elif action == "add" and rest:
        _add(ctx, store, rest)
    elif action == "last":
        _last(ctx)
    else:
        ctx.fail(USAGE)


def _table(*columns: str) -> Table:
    from rich.table import Table  # loaded on first use: keeps the prompt fast

    table = Table(show_header=True, box=None, padding=(0, 2, 0, 0), header_style="dim")
    for name in columns:
        table.add_column(name, overflow="fold")
    return table


def _kind_name(kind: object) -> str:
    return str(getattr(kind, "value", kind))


def _scope(entry: MemoryEntry, project: str | None) -> str:
    owner = getattr(entry, "project", None)
    if owner is None:
        return "global"
    # another project's key comes from its remote URL or path: it may hold escape sequences
    return "this project" if owner == project else terminal_safe(str(owner))


def _list(ctx: CommandContext, store: MemoryStoreLike, everywhere: bool) -> None:
    entries = store.load() if everywhere else store.visible()
    hidden = len(store.load()) - len(entries)
    more = f"; {hidden} in other projects (/memory list --all)" if hidden else ""
    if not entries:
        ctx.say(f"no memories yet{more}", "dim")
        return
    table = _table("id", "kind", "scope", "text")
    for entry in entries:
        table.add_row(
            Text(entry.id),
            _kind_name(entry.kind),
            Text(_scope(entry, store.project)),
            Text(terminal_safe(entry.text)),
        )
    ctx.console.print(table)
    ctx.say(f"{plural(len(entries), 'memory')}{more}", "dim")


def _search(ctx: CommandContext, store: MemoryStoreLike, query: str, everywhere: bool) -> None:
    hits = store.search(query, 8)
    if not hits:
        ctx.say("no matching memories" + ("" if everywhere else " (--all searches every project)"), "dim")
        return
    table = _table("score", "id", "kind", "scope", "text")
    for score, entry in hits:
        scope = Text(_scope(entry, None if everywhere else store.project))
        table.add_row(
            f"{score:.2f}", Text(entry.id), _kind_name(entry.kind), scope, Text(terminal_safe(entry.text))
        )
    ctx.console.print(table)


def _forget(ctx: CommandContext, store: MemoryStoreLike, wanted: str) -> None:
    """Forget by id, or by a unique id prefix of 4+ characters (as `nanohermes memory forget`); any
    project's: the user names it on purpose."""
    matches = store.matching_ids(wanted, everywhere=True)
    if len(matches) > 1:
        ctx.fail(f"id prefix {echoed(wanted)} matches {len(matches)} memories; give more characters")
    elif matches and store.forget(matches[0]):
        ctx.say(f"forgot {matches[0]}", "dim")
    elif len(wanted) < MIN_ID_PREFIX:
        ctx.fail(f"{echoed(wanted)} is too short: give the id or at least {MIN_ID_PREFIX} characters of it")
    else:
        ctx.fail(f"no memory with id {echoed(wanted)} (/memory list --all shows the ids)")


def _stats(ctx: CommandContext, store: MemoryStoreLike) -> None:
    stats = store.stats()
    counts = sorted((_kind_name(kind), count) for kind, count in stats.per_kind.items() if count)
    parts = ", ".join(f"{kind} {count}" for kind, count in counts) or "none"
    ctx.say(f"{plural(stats.total, 'memory')} ({parts}) · {stats.size_bytes:,} bytes · {stats.path}")


def _add(ctx: CommandContext, store: MemoryStoreLike, rest: str) -> None:
    """`/memory add [--project] KIND TEXT`: typed by the user (source `user`), global by default."""
    words = rest.split()
    # the flag is the first word (or the last, as `nanohermes memory add KIND TEXT --project`); one
    # inside the text is the user's text, not a request to change the scope
    project = "--project" in (words[:1] + words[-1:])
    if project:
        words = words[1:] if words[0] == "--project" else words[:-1]
    if len(words) < 2:
        ctx.fail(USAGE)
        return
    kind, text = words[0], " ".join(words[1:])
    added = store.remember(kind, text, "user", scope="project" if project else "global")
    entry = store.get(store.last_id or "")
    where = _scope(entry, store.project) if entry is not None else "?"
    ident = entry.id if entry is not None else "?"
    ctx.say(f"saved {ident} ({where})" if added else f"duplicate of {ident} ({where}), merged", "dim")


def _last(ctx: CommandContext) -> None:
    """The memories the current block holds, with their scores and the terms that matched."""
    recalled = ctx.runtime.agent.recalled
    if not recalled:
        ctx.say("no memories were recalled for the last turn", "dim")
        return
    table = _table("score", "id", "kind", "matched", "text")
    for memory in recalled:
        table.add_row(
            f"{memory.score:.2f}",
            Text(memory.id),
            memory.kind,
            Text(terminal_safe(", ".join(memory.terms))),
            Text(terminal_safe(memory.text)),
        )
    ctx.console.print(table)
