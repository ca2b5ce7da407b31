"""What memory did for a turn (SPEC §3.6, §3.10): the block to inject and the memories in it.

The memories come with their BM25 scores and the query terms that matched, so the REPL can say
«memory: 3 recalled · /memory last», `/memory last` can show why, and `-p --json` can list them.
"""

from __future__ import annotations

from dataclasses import dataclass

from nanohermes.core.errors import StoreError
from nanohermes.core.events import RecalledMemory
from nanohermes.memory.block import block_lines, render_block
from nanohermes.memory.constants import SHORT_MESSAGE_CHARS
from nanohermes.memory.store import MemoryStore


@dataclass(frozen=True)
class Recall:
    """`block`: the block for this turn; `memories`: the entries in it with scores, best first;
    `kept`: the previous block stays (a short message without hits, e.g. «continue»)."""

    block: str
    memories: tuple[RecalledMemory, ...] = ()
    kept: bool = False


def recall_for_turn(store: MemoryStore, query: str, previous_block: str, lang: str = "en") -> Recall:
    """The block to inject for `query` and the memories it holds (SPEC §3.6)."""
    hits = store.search(query)
    if not hits and len("".join(query.split())) < SHORT_MESSAGE_CHARS:
        return Recall(previous_block, kept=True)
    entries = [entry for _, entry in hits]
    shown = len(block_lines(entries, lang))
    memories = tuple(
        RecalledMemory(entry.id, entry.kind.value, entry.text, score, _matched(store, query, entry.id))
        for score, entry in hits[:shown]
    )
    return Recall(render_block(entries, lang), memories)


def _matched(store: MemoryStore, query: str, entry_id: str) -> tuple[str, ...]:
    """The query terms an entry matched, as `explain` shows them (`makefil ← makefiles`)."""
    try:
        return tuple(part.display for part in store.explain(query, entry_id).terms)
    except StoreError:  # forgotten by another process a moment ago: it was still recalled
        return ()
