"""Figures for `nanohermes memory stats`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from nanohermes.memory.entry import Entry
from nanohermes.memory.kinds import Kind


@dataclass(frozen=True)
class MemoryStats:
    path: Path
    exists: bool
    size_bytes: int
    total: int
    max_entries: int
    per_kind: dict[Kind, int]
    per_source: dict[str, int]
    oldest_ts: int | None
    newest_ts: int | None


def compute_stats(path: Path, entries: list[Entry], max_entries: int) -> MemoryStats:
    try:
        size = path.stat().st_size
        exists = True
    except OSError:
        size, exists = 0, False
    kinds = Counter(entry.kind for entry in entries)
    sources = Counter(entry.source or "(none)" for entry in entries)
    stamps = [entry.ts for entry in entries if entry.ts > 0]
    return MemoryStats(
        path=path,
        exists=exists,
        size_bytes=size,
        total=len(entries),
        max_entries=max_entries,
        per_kind={kind: kinds.get(kind, 0) for kind in Kind},
        per_source=dict(sources.most_common()),
        oldest_ts=min(stamps) if stamps else None,
        newest_ts=max(stamps) if stamps else None,
    )
