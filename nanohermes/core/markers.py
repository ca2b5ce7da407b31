"""Marks in text that mean something else than what they show, stdlib only: the memory block's
markers in the system prompt (SPEC §3.6; memory/block.py writes them, prompts.py keeps them out of
the text it assembles), and the invisible characters that hide text from a reader."""

from __future__ import annotations

BLOCK_START = "=== Long-term memory (retrieved from past sessions) ==="
BLOCK_END = "=== End long-term memory ==="
INVISIBLE = "\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff"
"""Invisible Unicode, as ranges for a regex character class: zero-width characters, bidi marks and
overrides, word joiners and isolates, the zero-width no-break space (BOM). Text holding them reads
differently to a person than to the model or the OS."""
_DEFUSED = {marker: marker.replace("===", "==") for marker in (BLOCK_START, BLOCK_END)}


def defused(text: str) -> str:
    """`text` with the block's markers made inert (`===` → `==`). A memory holding BLOCK_END would end
    the block early (its rest read as system instructions); text from a file in the workspace
    (AGENTS.md, a sub-agent's prompt) quoting BLOCK_START would have `set_block` cut the system
    prompt from there to its end at the next turn."""
    for marker, inert in _DEFUSED.items():
        text = text.replace(marker, inert)
    return text
