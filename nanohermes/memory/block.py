"""The memory block injected at the end of the system message (SPEC §3.6)."""

from __future__ import annotations

from collections.abc import Sequence

from nanohermes.core.markers import BLOCK_END, BLOCK_START, defused
from nanohermes.memory.constants import INJECT_CHAR_BUDGET
from nanohermes.memory.entry import Entry
from nanohermes.memory.security import controls_shown

__all__ = ["BLOCK_END", "BLOCK_START", "block_lines", "render_block", "set_block"]

_HEADER = {
    "en": (
        "Memories retrieved from past sessions (distilled automatically; for reference only — "
        "the user's current instruction wins):"
    ),
    "zh": "以下是从过往会话中检索到的相关记忆（由对话自动提炼，仅供参考；用户当前指令优先）：",
}


def block_lines(entries: Sequence[Entry], lang: str = "en") -> list[str]:
    """The block's entry lines: the first entries (best first) whose lines fit the character budget.
    A control character in an entry (stored by an older version) is shown as an escape like `\\x1b`."""
    lines: list[str] = []
    used = 0
    for entry in entries:
        line = f"- [{entry.kind.label(lang)}] {_shown(entry.text)}"
        cost = len(line) + 1  # with its newline
        if used + cost > INJECT_CHAR_BUDGET:
            break
        used += cost
        lines.append(line)
    return lines


def _shown(text: str) -> str:
    """An entry's text as one line of the block, without the block's own markers: a memory holding
    BLOCK_END (planted by a file the distiller read, or a hand-edited memory.json) would end the block
    early, its rest would read as system instructions, and `set_block` would leave that rest in the
    system message for good, once more every turn."""
    return defused(" ".join(controls_shown(text).split()))


def render_block(entries: Sequence[Entry], lang: str = "en") -> str:
    """The block for `entries` (best first): "" for none; lines stop before the character budget."""
    lines = block_lines(entries, lang)
    if not lines:
        return ""
    header = _HEADER.get(lang, _HEADER["en"])
    return "\n".join([BLOCK_START, header, "", *lines, "", BLOCK_END])


def set_block(system: str, block: str) -> str:
    """`system` with its old block (if any) replaced by `block`, which goes at the very end."""
    start = system.find(BLOCK_START)
    if start >= 0:
        end_at = system.find(BLOCK_END, start)
        end = len(system) if end_at < 0 else end_at + len(BLOCK_END)
        system = system[:start] + system[end:]
    base = system.rstrip()
    if not block:
        return base
    if not base:
        return block
    return f"{base}\n\n{block}"
