"""Scopes (SPEC §3.9): every entry is global (`project` absent) or belongs to one project.

A store opened for a project sees the global entries and that project's; a store opened without
one (`project=None`: scripts, `memory list --all`) sees every entry.
"""

from __future__ import annotations

from collections.abc import Iterable

from nanohermes.core.errors import MemoryRejected
from nanohermes.memory.entry import Entry
from nanohermes.memory.kinds import Kind

GLOBAL = "global"
PROJECT = "project"
SCOPES = (GLOBAL, PROJECT)
_PROJECT_KINDS = frozenset({Kind.FACT, Kind.LESSON})


def parse_scope(value: object) -> str | None:
    """ "global" or "project" (case-insensitive), else None."""
    if isinstance(value, str) and value.strip().lower() in SCOPES:
        return value.strip().lower()
    return None


def default_scope(kind: Kind) -> str:
    """Without a scope: facts and lessons belong to the project, preferences and corrections are global."""
    return PROJECT if kind in _PROJECT_KINDS else GLOBAL


def target_project(scope: str | None, kind: Kind, project: str | None) -> str | None:
    """The `project` field a new memory gets in a store opened for `project` (None: global)."""
    if scope is None:
        chosen = default_scope(kind)
    else:
        chosen = parse_scope(scope) or ""
        if not chosen:
            raise MemoryRejected(f"unknown scope {scope!r}; use global or project")
    return project if chosen == PROJECT else None


def sees(project: str | None, entry: Entry) -> bool:
    """Whether a store opened for `project` sees `entry`: global entries and the project's own."""
    return project is None or entry.project is None or entry.project == project


def visible(project: str | None, entries: Iterable[Entry]) -> list[Entry]:
    return [entry for entry in entries if sees(project, entry)]


def merged_project(old: Entry, new_project: str | None, store_project: str | None) -> str | None:
    """The scope of a duplicate after merging: the wider one wins, and a project memory re-learnt
    in another project becomes global (it was not project-specific after all)."""
    if old.project is None or new_project is None:
        return None
    if store_project is not None and old.project != store_project:
        return None
    return old.project
