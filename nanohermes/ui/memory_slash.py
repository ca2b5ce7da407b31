"""`/memory` in the REPL (SPEC §3.9, §3.10): `nanohermes memory`'s actions on the session's store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from nanohermes.config.options import MemoryArgs
from nanohermes.core.errors import ConfigError, StoreError
from nanohermes.ui.memory_cmd import ACTIONS, MAX_LINE_CHARS
from nanohermes.ui.safe_text import one_line, terminal_safe

if TYPE_CHECKING:
    from nanohermes.ui.command_context import CommandContext

USAGE = (
    "usage: /memory [list [--all] [--history] | search Q [--all] [--history] | forget ID | replace ID TEXT"
    " | stats | add [--project | --team] KIND TEXT | last]"
)


def run_memory(ctx: CommandContext, arg: str) -> None:
    store = ctx.runtime.store
    if store is None:
        ctx.fail("memory is off for this run (--no-memory or memory = false)")
        return
    action, _, rest = arg.strip().partition(" ")
    if action == "last":
        _last(ctx)
        return
    args = _parse(action or "list", rest)
    if args is None:
        ctx.fail(USAGE)
        return
    try:
        ACTIONS[args.action](ctx.console, store, args, ctx.runtime.settings.language)
    except (ConfigError, StoreError) as err:  # a broken or special memory.json: one line, the REPL goes on
        ctx.fail(one_line(err.one_line(), MAX_LINE_CHARS))


def _parse(action: str, rest: str) -> MemoryArgs | None:
    """The `nanohermes memory ACTION` arguments that `/memory ACTION REST` means; None when unusable."""
    words = rest.split()
    if action in ("list", "search"):  # only these take --all: in `add` it is part of the memory's text
        query = " ".join(word for word in words if word not in ("--all", "--history"))
        if not query and action == "search":
            return None
        return MemoryArgs(action, query, all_projects="--all" in words, history="--history" in words)
    if action == "forget" and words:
        return MemoryArgs("forget", rest.strip())
    if action == "replace" and len(words) >= 2:
        return MemoryArgs("replace", " ".join(words[1:]), target=words[0])
    if action == "stats":
        return MemoryArgs("stats")
    # the flag is the first word (or the last, as `nanohermes memory add KIND TEXT --project`); one
    # inside the text is the user's text, not a request to change the scope
    flag = next((word for word in words[:1] + words[-1:] if word in ("--project", "--team")), "")
    if flag:
        words = words[1:] if words[0] == flag else words[:-1]
    if action != "add" or len(words) < 2:
        return None
    return MemoryArgs(
        "add", " ".join(words[1:]), kind=words[0], project=flag == "--project", team=flag == "--team"
    )


def _last(ctx: CommandContext) -> None:
    """The memories the current block holds, with their scores and the terms that matched."""
    recalled = ctx.runtime.agent.recalled
    if not recalled:
        ctx.say("no memories were recalled for the last turn", "dim")
        return
    table = Table(box=None, padding=(0, 2, 0, 0), header_style="dim")
    for column in ("score", "id", "kind", "scope", "matched", "text"):
        table.add_column(column, overflow="fold")
    for memory in recalled:
        matched = terminal_safe(", ".join(memory.terms))
        text = Text(terminal_safe(memory.text))
        table.add_row(f"{memory.score:.2f}", Text(memory.id), memory.kind, memory.scope, Text(matched), text)
    ctx.console.print(table)
