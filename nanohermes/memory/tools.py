"""The memory tools' logic (SPEC §3.8) as plain functions; the tool layer wraps them."""

from __future__ import annotations

from nanohermes.core.errors import StoreError, ToolError
from nanohermes.core.types import plural
from nanohermes.memory.kinds import Kind
from nanohermes.memory.security import checked_part
from nanohermes.memory.store import MIN_ID_PREFIX, MemoryStore

MAX_SEARCH_K = 20


def save_memory(
    store: MemoryStore, kind: str, text: str, scope: str | None = None, replaces: str | None = None
) -> str:
    """memory_save: store one memory (source `tool`), perhaps replacing the memory `replaces`."""
    text = checked_part(text)  # what is stored comes from its head; _save_risk checked the same
    old = resolve_id(store, replaces, "memory_search shows ids") if replaces else ""
    try:
        added = store.remember(kind, text, source="tool", scope=scope, replaces=old)
    except StoreError as err:  # MemoryRejected included (an unknown kind or scope): the reason is the message
        raise ToolError(err.one_line()) from None
    said = f"Saved ({Kind.parse(kind)})" if added else "Duplicate of an existing memory, nothing added"
    said += f", replacing {old}" if old else ""
    return f"{said}; {len(store.visible())} memories in total"


def search_memory(store: MemoryStore, query: str, k: int = 4) -> str:
    """memory_search: the best k memories for `query`, with id, kind, score and text."""
    if not query.strip():  # the tool layer has checked the types
        raise ToolError("memory_search needs a non-empty query")
    try:
        hits = store.search(query, top_k=max(1, min(k, MAX_SEARCH_K)))
    except StoreError as err:
        raise ToolError(err.one_line()) from None
    if not hits:
        return "no matching memories"
    lines = [f"{plural(len(hits), 'matching memory')}:"]
    lines += [f"- id={e.id} kind={e.kind.value} score={score:.2f}: {e.text}" for score, e in hits]
    return "\n".join(lines)


def forget_memory(store: MemoryStore, memory_id: str) -> str:
    """memory_forget: delete one memory by its id (as shown by memory_search)."""
    if not memory_id.strip():
        raise ToolError("memory_forget needs the id of a memory (memory_search shows ids)")
    memory_id = resolve_id(store, memory_id, "memory_search shows ids")
    try:
        entry = store.get(memory_id)
        if entry is None or not store.forget(memory_id):  # forgotten by another process meanwhile
            raise ToolError(f"no memory with id {memory_id!r}; memory_search shows ids")
    except StoreError as err:
        raise ToolError(err.one_line()) from None
    left = len(store.visible())
    return f"Forgot memory {memory_id} ({entry.kind.value}: {entry.text}); {left} memories left"


def resolve_id(store: MemoryStore, wanted: str, hint: str, *, everywhere: bool = False) -> str:
    """The id `wanted` names (itself, or the one id it begins), else ToolError ending with `hint`."""
    matches = store.matching_ids(wanted, everywhere=everywhere)
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ToolError(f"id prefix {wanted.strip()!r} matches {len(matches)} memories; give more characters")
    if len(wanted.strip()) < MIN_ID_PREFIX:
        short = f"{wanted.strip()!r} is too short: give the id or at least {MIN_ID_PREFIX} characters of it"
        raise ToolError(f"{short}; {hint}")
    raise ToolError(f"no memory with id {wanted.strip()!r}; {hint}")
