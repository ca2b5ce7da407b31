"""The memory block at the end of the system message (SPEC §3.6), and what memory did for a turn."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nanohermes.core.events import RecalledMemory
from nanohermes.core.markers import BLOCK_END, BLOCK_START, defused
from nanohermes.memory.constants import INJECT_CHAR_BUDGET
from nanohermes.memory.entry import Entry
from nanohermes.memory.security import controls_shown

__all__ = ["BLOCK_END", "BLOCK_START", "Recall", "render_block", "set_block"]

_HEADER = {
    "en": "Memories retrieved from past sessions (distilled automatically; for reference only — "
    "the user's current instruction wins):",
    "zh": "以下是从过往会话中检索到的相关记忆（由对话自动提炼，仅供参考；用户当前指令优先）：",
}


def block_lines(entries: Sequence[Entry], lang: str = "en") -> list[str]:
    """The block's lines of the first entries that fit the budget, each on one line, a control
    character shown as an escape, and without the block's markers: a memory holding BLOCK_END would
    end the block early, its rest read as system instructions."""
    lines: list[str] = []
    used = 0
    for entry in entries:
        line = f"- [{entry.kind.label(lang)}] {defused(' '.join(controls_shown(entry.text).split()))}"
        used += len(line) + 1  # with its newline
        if used > INJECT_CHAR_BUDGET:
            break
        lines.append(line)
    return lines


def render_block(entries: Sequence[Entry], lang: str = "en") -> str:
    """The block for `entries` (best first): "" for none; lines stop before the character budget."""
    lines, header = block_lines(entries, lang), _HEADER.get(lang, _HEADER["en"])
    return "\n".join([BLOCK_START, header, "", *lines, "", BLOCK_END]) if lines else ""


def set_block(system: str, block: str) -> str:
    """`system` with its old block (if any) replaced by `block`, which goes at the very end."""
    start = system.find(BLOCK_START)
    if start >= 0:
        end_at = system.find(BLOCK_END, start)
        end = len(system) if end_at < 0 else end_at + len(BLOCK_END)
        system = system[:start] + system[end:]
    base = system.rstrip()
    return f"{base}\n\n{block}" if base and block else base or block


@dataclass(frozen=True)
class Recall:
    """This turn's `block`, the `memories` in it, and whether the previous block was `kept`."""

    block: str
    memories: tuple[RecalledMemory, ...] = ()
    kept: bool = False
