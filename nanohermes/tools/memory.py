"""memory_save, memory_search, memory_forget: the model's hands on the long-term memory (SPEC §3.8).

Thin wrappers over `nanohermes.memory.save_memory / search_memory / forget_memory`, which hold the
logic and raise ToolError for bad input. The import happens at call time, so this module (and the
tool layer) loads even where the memory package is reduced or replaced; the runner offers these tools
only when a store is given (memory on).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from nanohermes.tools.base import Tool, tool_from_function

if TYPE_CHECKING:
    from nanohermes.memory import MemoryStore


class MemoryTools:
    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def memory_save(
        self,
        kind: str,
        text: str,
        scope: Literal["global", "project"] | None = None,
        replaces: str | None = None,
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
        from nanohermes.memory import save_memory

        return save_memory(self.store, kind, text, scope, replaces)

    def memory_search(self, query: str, k: int = 4) -> str:
        """Search the long-term memory (BM25 over words and CJK bigrams); shows id, kind, score, text.

        Args:
            query: words to look for
            k: how many memories to return at most
        """
        from nanohermes.memory import search_memory

        return search_memory(self.store, query, k)

    def memory_forget(self, id: str) -> str:
        """Remove one memory by its id (as shown by memory_search).

        Args:
            id: the memory's id
        """
        from nanohermes.memory import forget_memory

        return forget_memory(self.store, id)

    def tools(self) -> list[Tool]:
        return [
            tool_from_function(self.memory_save, summary_arg="text", approval_kind="memory", risk=_save_risk),
            tool_from_function(self.memory_search, approval_kind="memory"),
            tool_from_function(self.memory_forget, approval_kind="memory"),
        ]


def _save_risk(args: dict[str, Any]) -> str | None:
    """A memory_save whose text runs fetched code, disables security or sends data away (SPEC §3.7)
    needs the user's approval, like a write."""
    from nanohermes.memory.security import checked_part, risky_instruction

    text = args.get("text")
    return risky_instruction(checked_part(text)) if isinstance(text, str) else None
