"""System prompt assembly (SPEC §4.5): base prompt, workspace, platform, date, AGENTS.md. The memory
block goes last (callers use `nanohermes.memory.set_block`), so the stable prefix stays cacheable."""

from __future__ import annotations

import os
import platform
from datetime import date
from pathlib import Path

from nanohermes.core.errors import reason
from nanohermes.core.fileio import read_regular
from nanohermes.core.markers import defused

AGENTS_FILE = "AGENTS.md"
AGENTS_MAX_CHARS = 20_000

BASE_PROMPT = """\
You are nanohermes, a coding agent working in the user's terminal. You help with software tasks in \
the workspace: read and search code, edit files, run commands, explain and fix things.

Work like a careful senior engineer: look before you change (read_file, list_files, grep), make the \
smallest change that does the job, keep the project's style, and check your work (run the tests or \
the command) when you can. Paths are relative to the workspace. When you are done, answer briefly: \
what you did and anything the user must know. Ask only when you truly cannot proceed."""

MEMORY_GUIDE = """\
You have a long-term memory shared across sessions (memory_save, memory_search, memory_forget). \
Save with memory_save only what will still be true and useful in future, unrelated sessions: the \
user's stable preferences, corrections (what the user rejected and the right way), lessons paid for \
(a pitfall met, an approach proven), and stable facts about the project or environment. Never save \
one-off state (today's branch, a temporary file, the current task's progress), secrets, or what the \
code itself already says. One self-contained sentence per memory. Memories retrieved for this turn \
appear at the end of this prompt; the user's current instruction always wins over them."""

NO_MEMORY_GUIDE = "Long-term memory is off for this session: do not promise to remember anything."


def base_system_prompt(
    workspace: Path,
    *,
    memory: bool,
    extra: str = "",
    agents_md: str | None = None,
    skills: str = "",
) -> str:
    """The system prompt without a memory block. `extra` replaces the base role (sub-agents);
    `agents_md` None reads AGENTS.md here."""
    parts = [extra.strip() or BASE_PROMPT, MEMORY_GUIDE if memory else NO_MEMORY_GUIDE]
    today = date.today().isoformat()
    parts.append(f"Workspace: {workspace}\nPlatform: {platform.system()} {platform.release()}\nDate: {today}")
    if skills:
        parts.append(skills)
    agents = load_agents_md(workspace)[0] if agents_md is None else agents_md
    if agents:
        parts.append(f"Project instructions from {AGENTS_FILE} (the workspace root):\n\n{agents}")
    return defused("\n\n".join(parts))  # the memory block's markers mean one thing: the block


def load_agents_md(workspace: Path) -> tuple[str, str]:
    """(text, note): AGENTS.md, cut at AGENTS_MAX_CHARS, read only when it is a regular file inside
    the workspace (never through a link out, never a FIFO); else "" and why it was ignored."""
    path = workspace / AGENTS_FILE
    if not os.path.lexists(path):
        return "", ""
    try:
        real = path.resolve(strict=True)
        if not real.is_relative_to(workspace.resolve(strict=True)):
            return "", f"{AGENTS_FILE} ignored: it links to {real}, outside the workspace"
        # UTF-8: at most 4 bytes a character
        data, size = read_regular(real, 4 * AGENTS_MAX_CHARS + 4, follow=False)
    except FileNotFoundError:  # AGENTS.md is there (lexists), so it is a link to nothing
        return "", f"{AGENTS_FILE} ignored: it is a link to a file that does not exist"
    except (OSError, RuntimeError) as err:  # RuntimeError: a symlink loop on older Pythons
        return "", f"{AGENTS_FILE} ignored: {reason(err)}"
    # surrogateescape: one character per undecodable byte, so the bytes kept are counted exactly
    text = data.decode("utf-8", errors="surrogateescape")
    if len(text) <= AGENTS_MAX_CHARS and len(data) == size:
        return _replaced(text).strip(), ""
    kept = text[:AGENTS_MAX_CHARS]
    cut = size - len(kept.encode("utf-8", errors="surrogateescape"))
    return _replaced(kept).strip() + f"\n[… {cut} more bytes of {AGENTS_FILE} not shown]", ""


def _replaced(text: str) -> str:
    """Undecodable bytes (kept by surrogateescape) as U+FFFD, without a Windows editor's BOM."""
    return (
        text.encode("utf-8", errors="surrogateescape")
        .decode("utf-8", errors="replace")
        .removeprefix("\ufeff")
    )
