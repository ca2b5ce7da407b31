"""memory_save, memory_search, memory_forget (SPEC §3.8) over `nanohermes.memory`."""

from __future__ import annotations

from typing import Any, Literal

from nanohermes.memory import MemoryStore, forget_memory, save_memory, search_memory
from nanohermes.memory.security import checked_part, risky_instruction
from nanohermes.tools.base import Tool, tool_from_function


def memory_tools(store: MemoryStore) -> list[Tool]:
    def memory_save(
        kind: str, text: str, scope: Literal["global", "project"] | None = None, replaces: str | None = None
    ) -> str:
        """Save one durable memory for future sessions: a user preference, a correction the user made,
        a lesson paid for, or a stable fact about the user or project. Never one-off task state, secrets,
        or what the code already says.

        Args:
            kind: one of preference, correction, lesson, fact
            text: one self-contained sentence, at most 400 characters
            scope: global (every project) or project (this repository only); default by kind
            replaces: the id of a memory this one corrects or updates (kept only as history)
        """
        return save_memory(store, kind, text, scope, replaces)

    def memory_search(query: str, k: int = 4) -> str:
        """Search the long-term memory (BM25 over words and CJK bigrams); shows id, kind, score, text.

        Args:
            query: words to look for
            k: how many memories to return at most
        """
        return search_memory(store, query, k)

    def memory_forget(id: str) -> str:
        """Remove one memory by its id (as shown by memory_search).

        Args:
            id: the memory's id
        """
        return forget_memory(store, id)

    return [
        tool_from_function(memory_save, summary_arg="text", approval_kind="memory", risk=_save_risk),
        tool_from_function(memory_search, approval_kind="memory"),
        tool_from_function(memory_forget, approval_kind="memory"),
    ]


def _save_risk(args: dict[str, Any]) -> str | None:
    """A memory_save that runs fetched code, disables security or sends data away needs approval."""
    return risky_instruction(checked_part(args["text"]))  # required, and a string once parsed
