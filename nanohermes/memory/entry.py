"""One memory and its item in memory.json (SPEC §3.2): v1 with ids; the seed's items load too."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Container
from dataclasses import dataclass
from typing import Any

from nanohermes.core.types import valid_text
from nanohermes.memory.constants import MAX_CONTEXT, MAX_KEY_CHARS, MAX_KEYS
from nanohermes.memory.kinds import Kind

# Written only when set, in this order, after id, kind, text, source and ts.
OPTIONAL_FIELDS = ("keys", "context", "project", "superseded_by", "superseded_ts", "used_ts", "uses")
KNOWN_FIELDS = frozenset({"id", "kind", "text", "source", "ts", *OPTIONAL_FIELDS})


@dataclass(frozen=True)
class Entry:
    """One long-term memory. `keys` are extra search terms: indexed, never shown in the block."""

    id: str
    kind: Kind
    text: str
    source: str = ""
    ts: int = 0
    keys: tuple[str, ...] = ()
    context: str = ""  # the conversation around it: indexed with a low weight, never shown
    project: str | None = None  # its project's key (SPEC §3.9); None: global
    extra: str = ""  # the fields this version does not know, as JSON text, written back unchanged
    superseded_by: str = ""  # the id of the memory that replaced it ("" while live)
    superseded_ts: int = 0
    used_ts: int = 0  # when it was last injected (0: never)
    uses: int = 0
    team: bool = False  # read from the repository's team memory (team.py); not stored

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "kind": self.kind.value, "text": self.text}
        data |= {"source": self.source, "ts": self.ts}
        data |= {name: getattr(self, name) for name in OPTIONAL_FIELDS if getattr(self, name)}
        return data | (json.loads(self.extra) if self.extra else {})  # (entry_from took the known fields out)


def json_text(value: object) -> str:
    """The JSON text of a stored value, always encodable as UTF-8: a lone surrogate (a legal JSON
    escape, not UTF-8) stays escaped, so such a file is written back unchanged instead of never."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode()
    except UnicodeEncodeError:
        return json.dumps(value)
    return text


def derive_id(kind: Kind, text: str, taken: Container[str]) -> str:
    """A short stable id from kind and text (8 hex digits), made unique against `taken`: every
    process reading the same legacy file (no ids) derives the same ids."""
    seed = f"{kind.value}\n{text}"
    for attempt in range(1000):
        material = seed if attempt == 0 else f"{seed}\n{attempt}"
        candidate = hashlib.sha1(material.encode("utf-8")).hexdigest()[:8]
        if candidate not in taken:
            return candidate
    raise RuntimeError("could not derive a unique memory id")  # 1000 collisions of 32-bit hashes


def clean_keys(raw: object, *, cut: bool = True) -> tuple[str, ...]:
    """At most MAX_KEYS distinct non-empty strings of at most MAX_KEY_CHARS characters; `cut=False`
    for keys `remember` has yet to redact (cut first, a secret could escape redaction)."""
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list | tuple):
        return ()
    keys: dict[str, None] = {}
    limit = MAX_KEY_CHARS if cut else None
    for item in raw:
        if isinstance(item, str):
            key = " ".join(valid_text(item).split())[:limit].strip()
            if key:
                keys[key] = None
    return tuple(keys)[:MAX_KEYS]


def entry_from(item: object, taken: Container[str]) -> Entry | None:
    """The entry of one stored item, or None when this version cannot use it; a missing id is derived."""
    if not isinstance(item, dict):
        return None
    kind = Kind.parse(item.get("kind"))
    text = item.get("text")
    if kind is None or not isinstance(text, str) or not text.strip():
        return None
    text = valid_text(text.strip())
    entry_id, source, superseded, context, project = (
        valid_text(value) if isinstance(value := item.get(name), str) else ""
        for name in ("id", "source", "superseded_by", "context", "project")
    )
    if not entry_id.strip() or entry_id in taken:
        entry_id = derive_id(kind, text, taken)
    context = " ".join(context.split())[:MAX_CONTEXT]
    unknown = {name: value for name, value in item.items() if name not in KNOWN_FIELDS}
    extra = json_text(unknown) if unknown else ""
    ts, keys = _as_ts(item.get("ts")), clean_keys(item.get("keys"))
    used = _as_ts(item.get("superseded_ts")), _as_ts(item.get("used_ts")), _as_ts(item.get("uses"))
    scope = project.strip() or None
    return Entry(entry_id, kind, text, source, ts, keys, context, scope, extra, superseded, *used)


def _as_ts(value: object) -> int:
    """Unix seconds: 0 for anything but a finite number (a bool is none), or a negative one."""
    if isinstance(value, float) and math.isfinite(value):
        value = int(value)
    return max(value, 0) if isinstance(value, int) and not isinstance(value, bool) else 0
