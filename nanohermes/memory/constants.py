"""Limits of SPEC §3.1. They interlock: 4 entries of at most 400 characters fit the 2,400 budget."""

from __future__ import annotations

MAX_ENTRIES = 500
"""Entries kept in memory.json; beyond it the least protected, oldest entry is evicted."""
MAX_TEXT = 400
"""Characters per entry text; longer texts are cut at a sentence or clause boundary."""
INJECT_TOP_K = 4
"""Entries injected per turn."""
INJECT_CHAR_BUDGET = 2400
"""Characters of entry lines injected per turn."""
EXCERPT_CHARS = 6000
"""Characters of conversation shown to the distiller (head and tail halves when longer)."""
EXCERPT_MESSAGE_CHARS = 1200
"""Characters kept of any one message in the excerpt."""
MAX_KEYS = 8
"""Search keys per entry (synonyms, the other language's words); indexed, never shown."""
MAX_KEY_CHARS = 40
"""Characters per search key."""
DUPLICATE_MIN_WEIGHT = 12
"""Weight the shorter normalized text needs for containment to count as a duplicate (CJK char = 4)."""
SHORT_MESSAGE_CHARS = 8
"""A message with fewer non-space characters and no hits keeps the previous memory block."""
K1 = 1.2
B = 0.4
"""Retuned from 0.75 by bench/recall_bench.py: memories are short sentences of similar length, and
full length normalisation punished the longer ones (LoCoMo dev recall@4 +1.6 points; see README)."""
MAX_CONTEXT = 600
"""Characters of an entry's context (the conversation around it): indexed, never shown."""
CONTEXT_WEIGHT = 0.5
"""BM25F weight of the context field: it multiplies the field's term frequencies and its length."""
