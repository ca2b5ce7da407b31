"""Marks in text that mean something else than what they show: the memory block's markers (SPEC §3.6)
and the invisible characters that hide text from a reader."""

from __future__ import annotations

BLOCK_START = "=== Long-term memory (retrieved from past sessions) ==="
BLOCK_END = "=== End long-term memory ==="
INVISIBLE = "\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff"
"""Ranges for a regex class: zero-width characters, bidi marks and overrides, word joiners and
isolates, the BOM. Text holding them reads differently to a person than to the model."""
_DEFUSED = {marker: marker.replace("===", "==") for marker in (BLOCK_START, BLOCK_END)}


def defused(text: str) -> str:
    """The block's markers made inert. A memory holding BLOCK_END would end the block early (its rest
    read as system instructions); AGENTS.md quoting BLOCK_START would have `set_block` cut there."""
    for marker, inert in _DEFUSED.items():
        text = text.replace(marker, inert)
    return text
