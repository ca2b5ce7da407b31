"""Slash commands an editor offers in its prompt box (`available_commands_update`): the REPL's
`/compact`, `/memory …` and `/reset`, answered as agent messages instead of terminal output, and the
custom commands (`.nanohermes/commands/NAME.md`), sent to the model as their expanded text."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from acp import schema

from nanohermes.acp.session import EventSource
from nanohermes.agent.custom_commands import CustomCommand, expand_command, load_commands
from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import NanoHermesError
from nanohermes.core.events import Event, TextDelta, TurnFinished
from nanohermes.memory import resolve_id

if TYPE_CHECKING:
    from nanohermes.agent.loop import Agent
    from nanohermes.memory import MemoryStore

MEMORY_HINT = "list | search QUERY | forget ID | stats"
MEMORY_USAGE = f"usage: /memory [{MEMORY_HINT}]"
DONE = TurnFinished(True, "done")
BUILTINS = (
    CustomCommand("compact", "summarise the conversation so far to free context (memory is kept)", ""),
    CustomCommand("memory", "long-term memory: list, search QUERY, forget ID, stats", "", MEMORY_HINT),
    CustomCommand("reset", "clear the conversation; long-term memory stays", ""),
)


def available_commands(custom: Mapping[str, CustomCommand]) -> list[schema.AvailableCommand]:
    return [_offered(command) for command in (*BUILTINS, *custom.values())]


def _offered(command: CustomCommand) -> schema.AvailableCommand:
    hint = schema.UnstructuredCommandInput(hint=command.hint)
    given = schema.AvailableCommandInput(root=hint) if command.hint else None
    return schema.AvailableCommand(name=command.name, description=command.description, input=given)


def command_source(
    text: str, agent: Agent, workspace: Path, state_dir: Path, stores: Callable[[Path], MemoryStore | None]
) -> EventSource:
    """What answers `text`: our command, else the model (a custom command expanded, read afresh)."""
    name, _, rest = text.strip().partition(" ")
    if name == "/compact":
        return lambda _: itertools.chain(agent.compact(), [DONE])
    if name == "/reset":
        return lambda _: iter([TextDelta(_reset(agent)), DONE])
    if name == "/memory":
        return lambda _: iter([TextDelta(memory_command(stores(workspace), rest.strip())), DONE])

    def turn(cancel: CancelToken) -> Iterator[Event]:
        custom = load_commands(workspace, state_dir)[0] if text.startswith("/") else {}
        return agent.run(expand_command(custom, text) or text, cancel)

    return turn


def _reset(agent: Agent) -> str:
    agent.reset()
    try:
        agent.save()
    except NanoHermesError as err:
        return f"conversation cleared, but {err.one_line()}"
    return "Conversation cleared (long-term memory kept)."


def memory_command(store: MemoryStore | None, arg: str) -> str:
    """The text `/memory ARG` answers with (Markdown)."""
    if store is None:
        return "Memory is off for this server (--no-memory or memory = false)."
    action, _, rest = arg.partition(" ")
    rest = rest.strip()
    try:
        if action in ("", "list"):
            entries = [e for e in store.load() if not e.superseded_by]  # replaced ones are history
            lines = [f"- `{e.id}` {e.kind.value}: {e.text}" for e in entries]
            return "\n".join([*lines, f"\n{len(entries)} memories"]) if entries else "No memories yet."
        if action == "search" and rest:
            hits = store.search(rest, 8)
            lines = [f"- {score:.2f} `{e.id}` {e.kind.value}: {e.text}" for score, e in hits]
            return "\n".join(lines) or "No matching memories."
        if action == "forget" and rest:
            memory_id = resolve_id(store, rest, "/memory list shows the ids")
            return f"Forgot {memory_id}." if store.forget(memory_id) else f"No memory with id {memory_id}."
        if action == "stats":
            stats = store.stats()
            counts = ", ".join(f"{k.value} {n}" for k, n in sorted(stats.per_kind.items(), key=str) if n)
            return f"{stats.total} memories ({counts or 'none'}) · {stats.size_bytes:,} bytes · {stats.path}"
    except NanoHermesError as err:
        return err.one_line()
    return MEMORY_USAGE
