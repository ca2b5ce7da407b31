"""Limits of SPEC §3.1. They interlock: 4 entries of at most 400 characters fit the 2,400 budget."""

from __future__ import annotations

MAX_ENTRIES = 500  # beyond it the least protected, oldest entry is evicted
MAX_TEXT = 400  # characters per entry text, cut at a sentence or clause boundary
INJECT_TOP_K = 4  # entries injected per turn
INJECT_CHAR_BUDGET = 2400  # characters of entry lines injected per turn
EXCERPT_CHARS = 6000  # characters of conversation shown to the distiller (head and tail halves)
EXCERPT_MESSAGE_CHARS = 1200  # characters kept of any one message in the excerpt
MAX_KEYS = 8  # search keys per entry (synonyms, the other language's words): indexed, never shown
MAX_KEY_CHARS = 40  # characters per search key
DUPLICATE_MIN_WEIGHT = 12  # of the shorter key, for containment to be a duplicate (CJK char = 4)
SHORT_MESSAGE_CHARS = 8  # a shorter message without hits keeps the previous memory block
K1 = 1.2
B = 0.4
"""Retuned from 0.75 by bench/recall_bench.py: memories are short sentences of similar length, and
full length normalisation punished the longer ones (LoCoMo dev recall@4 +1.6 points; see README)."""
MAX_CONTEXT = 600  # characters of an entry's context (the conversation around it): indexed, never shown
CONTEXT_WEIGHT = 0.5  # BM25F weight of the context field: it multiplies its term frequencies and length
