"""What `remember` does to a memory before it is stored (SPEC §3.4 step 1, §3.9, §6)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable
from dataclasses import dataclass

from nanohermes.core.errors import MemoryRejected
from nanohermes.core.types import valid_text
from nanohermes.memory.constants import MAX_CONTEXT, MAX_TEXT
from nanohermes.memory.entry import Entry, clean_keys
from nanohermes.memory.kinds import Kind
from nanohermes.memory.security import redact, refusal_reason, risky_instruction, unsafe_removed
from nanohermes.memory.text import cut_text, normalize

GLOBAL = "global"
PROJECT = "project"


@dataclass(frozen=True)
class NewMemory:
    """One memory for `MemoryStore.remember_many`: what `remember` takes, but the source."""

    kind: Kind | str
    text: str
    keys: tuple[str, ...] = ()
    context: str = ""
    scope: str | None = None
    replaces: str = ""  # the id of the memory this one replaces


def prepare(memory: NewMemory, source: str, secrets: tuple[str, ...], project: str | None) -> Entry:
    """`memory` as an entry without an id, in a store opened for `project`: checked, redacted, on one
    line and cut; a risky distilled text refused (SPEC §3.7). Raises MemoryRejected."""
    kind, text = Kind.parse(memory.kind), memory.text
    if kind is None:
        raise MemoryRejected(f"unknown memory kind {str(memory.kind)!r}; use one of: {', '.join(Kind)}")
    text = valid_text(text).strip()
    if not text:
        raise MemoryRejected("memory text is empty; nothing to remember")
    reason = refusal_reason(text)
    if reason is None and source == "auto" and (risky := risky_instruction(text)):
        reason = f"{risky}; a distilled memory may not hold such an instruction, refused"
    if reason is not None:
        raise MemoryRejected(reason)
    text = cut_text(" ".join(redact(text, secrets).split()), MAX_TEXT)  # the block shows one line each
    if not normalize(text):
        raise MemoryRejected("text holds no words, only punctuation or spaces; nothing to remember")
    cleaned = unsafe_removed(valid_text(memory.context))  # never shown, so cleaned rather than refused
    context = cut_text(" ".join(redact(cleaned, secrets).split()), MAX_CONTEXT).rstrip("…")
    where = target_project(memory.scope, kind, project)
    return Entry("", kind, text, source, int(time.time()), prepare_keys(memory.keys, secrets), context, where)


def prepare_keys(keys: Iterable[str], secrets: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Search keys redacted, without unsafe ones (never shown, so dropped rather than refused)."""
    return clean_keys([redact(key, secrets) for key in keys if not refusal_reason(key)])


def parse_scope(value: object) -> str | None:
    """ "global" or "project" (case-insensitive), else None."""
    chosen = value.strip().lower() if isinstance(value, str) else None
    return chosen if chosen in (GLOBAL, PROJECT) else None


def target_project(scope: str | None, kind: Kind, project: str | None) -> str | None:
    """A new memory's `project` (None: global); without a scope, facts and lessons are the project's."""
    default = PROJECT if kind in (Kind.FACT, Kind.LESSON) else GLOBAL
    chosen = default if scope is None else parse_scope(scope)
    if chosen is None:
        raise MemoryRejected(f"unknown scope {scope!r}; use global or project")
    return project if chosen == PROJECT else None


def sees(project: str | None, entry: Entry) -> bool:
    """Whether a store opened for `project` (None: every entry) sees `entry`."""
    return project is None or entry.project is None or entry.project == project


def merge(old: Entry, new: Entry, store_project: str | None, secrets: tuple[str, ...]) -> Entry:
    """`old` refreshed by its duplicate `new` (SPEC §3.4): the longer text, the more protected kind,
    both keys, the newer context. The wider scope wins, and a project memory re-learnt in another
    project becomes global."""
    project = old.project
    if new.project is None or (store_project is not None and old.project != store_project):
        project = None
    return dataclasses.replace(
        old,
        kind=new.kind if new.kind.eviction_rank < old.kind.eviction_rank else old.kind,
        text=new.text if len(new.text) > len(old.text) else old.text,
        source=new.source,
        ts=new.ts,
        keys=prepare_keys(old.keys + new.keys, secrets),
        context=new.context or old.context,
        project=project,
    )
