"""The memory block's markers in the system prompt (SPEC §3.6), stdlib only: memory/block.py writes
them, prompts.py keeps them out of the text it assembles."""

from __future__ import annotations

BLOCK_START = "=== Long-term memory (retrieved from past sessions) ==="
BLOCK_END = "=== End long-term memory ==="
_DEFUSED = {marker: marker.replace("===", "==") for marker in (BLOCK_START, BLOCK_END)}


def defused(text: str) -> str:
    """`text` with the block's markers made inert (`===` → `==`). A memory holding BLOCK_END would end
    the block early (its rest read as system instructions); text from a file in the workspace
    (AGENTS.md, a sub-agent's prompt) quoting BLOCK_START would have `set_block` cut the system
    prompt from there to its end at the next turn."""
    for marker, inert in _DEFUSED.items():
        text = text.replace(marker, inert)
    return text
