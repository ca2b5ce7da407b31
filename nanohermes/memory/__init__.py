"""Long-term memory without a vector database (SPEC §3): one JSON file, BM25F, CJK bigrams; no HTTP,
no UI. Every name of SPEC §3.0 is importable from here."""

from __future__ import annotations

from nanohermes.memory.block import BLOCK_END, BLOCK_START, render_block, set_block
from nanohermes.memory.constants import (
    CONTEXT_WEIGHT,
    EXCERPT_CHARS,
    EXCERPT_MESSAGE_CHARS,
    INJECT_CHAR_BUDGET,
    INJECT_TOP_K,
    K1,
    MAX_CONTEXT,
    MAX_ENTRIES,
    MAX_TEXT,
    B,
)
from nanohermes.memory.distill import (
    DISTILL_SYSTEM_PROMPT,
    distill_messages,
    excerpt_from,
    parse_distill,
    save_distilled,
    worth_distilling,
)
from nanohermes.memory.entry import Entry
from nanohermes.memory.kinds import Kind
from nanohermes.memory.project import project_key
from nanohermes.memory.security import redact
from nanohermes.memory.store import MemoryStore, recall_for_turn
from nanohermes.memory.team import TeamStore, workspace_store
from nanohermes.memory.text import analyze, normalize, tokenize
from nanohermes.memory.tools import forget_memory, resolve_id, save_memory, search_memory

__all__ = [
    "B",
    "BLOCK_END",
    "BLOCK_START",
    "CONTEXT_WEIGHT",
    "DISTILL_SYSTEM_PROMPT",
    "EXCERPT_CHARS",
    "EXCERPT_MESSAGE_CHARS",
    "INJECT_CHAR_BUDGET",
    "INJECT_TOP_K",
    "K1",
    "MAX_CONTEXT",
    "MAX_ENTRIES",
    "MAX_TEXT",
    "Entry",
    "Kind",
    "MemoryStore",
    "TeamStore",
    "analyze",
    "distill_messages",
    "excerpt_from",
    "forget_memory",
    "resolve_id",
    "normalize",
    "parse_distill",
    "recall_for_turn",
    "project_key",
    "redact",
    "render_block",
    "save_distilled",
    "save_memory",
    "search_memory",
    "set_block",
    "tokenize",
    "worth_distilling",
    "workspace_store",
]
