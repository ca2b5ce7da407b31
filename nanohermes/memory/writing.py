"""What `remember` does to a text before it is stored (SPEC §3.4 step 1 and §6)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nanohermes.core.errors import MemoryRejected
from nanohermes.core.types import valid_text
from nanohermes.memory.constants import MAX_CONTEXT, MAX_TEXT
from nanohermes.memory.entry import clean_keys
from nanohermes.memory.kinds import Kind
from nanohermes.memory.security import (
    controls_removed,
    invisible_removed,
    redact,
    refusal_reason,
    risky_instruction,
)
from nanohermes.memory.text import cut_text


@dataclass(frozen=True)
class NewMemory:
    """One memory for `MemoryStore.remember_many`: what `remember` takes, but the source."""

    kind: Kind | str
    text: str
    keys: tuple[str, ...] = ()
    context: str = ""
    scope: str | None = None


def prepare_text(text: object, secrets: Iterable[str] = (), *, source: str = "tool") -> str:
    """Trimmed, checked, redacted (`secrets` too), on one line, at most MAX_TEXT characters.
    A distilled text (source `auto`) that runs fetched code, disables security or sends data away is
    refused (SPEC §3.7). Raises MemoryRejected."""
    if not isinstance(text, str):
        raise MemoryRejected(f"memory text must be a string, not {type(text).__name__}")
    text = valid_text(text).strip()
    if not text:
        raise MemoryRejected("memory text is empty; nothing to remember")
    reason = refusal_reason(text)
    if reason is None and source == "auto":
        risky = risky_instruction(text)
        reason = f"{risky}; a distilled memory may not hold such an instruction, refused" if risky else None
    if reason is not None:
        raise MemoryRejected(reason)
    one_line = " ".join(redact(text, secrets).split())  # the block shows one line per memory
    return cut_text(one_line, MAX_TEXT)


def prepare_keys(keys: Iterable[str], secrets: Iterable[str] = ()) -> tuple[str, ...]:
    """Search keys: redacted, without unsafe ones (control characters, invisible Unicode, injection
    phrases: a key is never shown, so it is dropped rather than refused), de-duplicated, at most
    MAX_KEYS."""
    secrets = tuple(secrets)
    safe = [redact(key, secrets) for key in keys if isinstance(key, str) and refusal_reason(key) is None]
    return clean_keys(safe)


def prepare_context(context: object, secrets: Iterable[str] = ()) -> str:
    """The conversation around a memory: redacted, on one line, without terminal escape sequences,
    control or invisible characters, at most MAX_CONTEXT characters. Never shown, so it is cleaned
    rather than refused."""
    if not isinstance(context, str):
        return ""
    cleaned = invisible_removed(controls_removed(valid_text(context)))
    one_line = " ".join(redact(cleaned, tuple(secrets)).split())
    return cut_text(one_line, MAX_CONTEXT).rstrip("…") if one_line else ""
