"""Helpers shared by the memory tests (imported by module name; pytest puts this folder on sys.path)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CHILD_WRITER = """
import sys
from pathlib import Path
from nanohermes.memory import MemoryStore
store = MemoryStore(Path(sys.argv[1]))
tag, count = sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
sys.stdin.readline()
for i in range(count):
    store.remember("fact", f"writer {tag} note {i:03d} marker w{tag}n{i:03d}end", source="test")
"""

LOOP_WRITER = """
import sys
from pathlib import Path
from nanohermes.memory import MemoryStore
store = MemoryStore(Path(sys.argv[1]))
tag = sys.argv[2]
i = 0
while True:
    store.remember("lesson", f"crash round {tag} entry {i:06d} keeps the file whole", source="test")
    if i == 0:
        print("writing", flush=True)
    i += 1
"""


def write_raw(directory: Path, entries: list[dict[str, Any]], version: int | None = 1) -> Path:
    """Write memory.json directly (as another program or an older nanohermes would)."""
    directory.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"entries": entries}
    if version is not None:
        data["version"] = version
    path = directory / "memory.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def raw_entry(kind: str, text: str, ts: int, entry_id: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": kind, "text": text, "source": "test", "ts": ts}
    if entry_id is not None:
        data["id"] = entry_id
    return data
