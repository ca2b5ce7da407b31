"""One memory and the memory.json format (SPEC §3.2): v1 with ids; the seed's files load too."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from nanohermes.core.types import valid_text
from nanohermes.memory.constants import MAX_CONTEXT, MAX_KEY_CHARS, MAX_KEYS
from nanohermes.memory.kinds import Kind

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Entry:
    """One long-term memory. `keys` are extra search terms: indexed, never shown in the block."""

    id: str
    kind: Kind
    text: str
    source: str = ""
    ts: int = 0
    keys: tuple[str, ...] = field(default=())
    context: str = ""
    """The conversation around the memory (the user's words when it was distilled): indexed with a
    low weight, never shown in the block or sent to the model."""
    project: str | None = None
    """The project this memory belongs to (its key, SPEC §3.9); None: global."""
    extra: str = ""
    """Fields this version does not know, as the JSON text of an object ("" when none): written back
    unchanged so a file from a newer program loses nothing (SPEC §3.2)."""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind.value,
            "text": self.text,
            "source": self.source,
            "ts": self.ts,
        }
        if self.keys:
            data["keys"] = list(self.keys)
        if self.context:
            data["context"] = self.context
        if self.project is not None:
            data["project"] = self.project
        if self.extra:
            for name, value in json.loads(self.extra).items():
                data.setdefault(name, value)
        return data


class FormatError(ValueError):
    """memory.json does not hold a memory store."""


def derive_id(kind: Kind, text: str, taken: set[str] | dict[str, Any]) -> str:
    """A short stable id from kind and text (8 hex digits), made unique against `taken`.

    Deterministic, so every process reading the same legacy file (no ids) derives the same ids.
    """
    seed = f"{kind.value}\n{text}"
    for attempt in range(1000):
        material = seed if attempt == 0 else f"{seed}\n{attempt}"
        candidate = hashlib.sha1(material.encode("utf-8")).hexdigest()[:8]
        if candidate not in taken:
            return candidate
    raise RuntimeError("could not derive a unique memory id")  # 1000 collisions of 32-bit hashes


def clean_keys(raw: object, *, cut: bool = True) -> tuple[str, ...]:
    """At most MAX_KEYS distinct non-empty strings of at most MAX_KEY_CHARS characters. `cut=False`
    keeps them whole, for keys `remember` has yet to redact: cut first, a secret could lose the
    length that makes it recognisable and be stored in part."""
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


KNOWN_FIELDS = frozenset({"id", "kind", "text", "source", "ts", "keys", "context", "project"})
_TOP_FIELDS = frozenset({"version", "entries"})


@dataclass(frozen=True)
class Kept:
    """What this version cannot use but writes back unchanged (SPEC §3.2): the stored entries it
    cannot use (an unknown kind, an empty text, not an object) as JSON lines, and the document's
    unknown top-level fields as (name, JSON value) pairs."""

    lines: tuple[str, ...] = ()
    top: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Document:
    entries: list[Entry]
    version: int
    kept: Kept
    by_line: bool = field(default=False, compare=False)
    """Read line by line: the file is laid out as this program writes it, one entry per line."""


def parse_document(raw: bytes, known: Known | None = None) -> Document:
    """The entries, format version and kept parts of memory.json's bytes; FormatError if it is not a
    store."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise FormatError(f"not valid JSON: {err}") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries", []), list):
        raise FormatError("no 'entries' list at the top level")
    version = data.get("version", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise FormatError(f"bad version {version!r}")
    items = data.get("entries", [])
    kept_lines: list[str] = []
    entries = entries_from_list(items, known, kept_lines)
    top = tuple((name, _dumps(value)) for name, value in data.items() if name not in _TOP_FIELDS)
    return Document(entries, version, Kept(tuple(kept_lines), top))


def _dumps(value: object) -> str:
    return json_text(value)


def json_text(value: object) -> str:
    """The JSON text of a stored value, always encodable as UTF-8: other characters as they are, but
    a value holding a lone surrogate (legal as a JSON `\\ud800` escape, not in UTF-8) written with
    escapes, so a file another program wrote that way is written back unchanged instead of never."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode()
    except UnicodeEncodeError:
        return json.dumps(value)
    return text


def json_bytes(value: object) -> bytes:
    """`json_text(value)` as UTF-8 (one encode on the common path)."""
    try:
        return json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:  # a lone surrogate: see json_text
        return json.dumps(value).encode()


Known = dict[str, tuple[dict[str, Any], Entry]]
"""Stored dicts already turned into entries, by id: an unchanged dict is not parsed again."""


def entries_from_list(
    items: list[Any], known: Known | None = None, kept: list[str] | None = None
) -> list[Entry]:
    """Entries from stored dicts: a bad kind or empty text leaves the item out of the entries (into
    `kept`, as a JSON line); other fields default. With `known`, a dict equal to the one an entry
    came from before yields that same entry."""
    entries: list[Entry] = []
    taken: dict[str, None] = {}
    for item in items:
        if not isinstance(item, dict):
            if kept is not None:
                kept.append(_dumps(item))
            continue
        stored_id = item.get("id")
        if known is not None and isinstance(stored_id, str):
            seen = known.get(stored_id)
            if seen is not None and seen[1].id not in taken and seen[0] == item:
                taken[seen[1].id] = None
                entries.append(seen[1])
                continue
        entry = _entry_from(item, taken)
        if entry is None and kept is not None:
            kept.append(_dumps(item))
        if entry is not None:
            taken[entry.id] = None
            entries.append(entry)
            if known is not None and entry.id == stored_id:
                known[entry.id] = (item, entry)
    return entries


def _entry_from(item: dict[str, Any], taken: dict[str, None]) -> Entry | None:
    kind = Kind.parse(item.get("kind"))
    text = item.get("text")
    if kind is None or not isinstance(text, str) or not text.strip():
        return None
    text = valid_text(text.strip())
    source = item.get("source")
    entry_id = item.get("id")
    if isinstance(entry_id, str):
        entry_id = valid_text(entry_id)
    if not isinstance(entry_id, str) or not entry_id.strip() or entry_id in taken:
        entry_id = derive_id(kind, text, taken)
    return Entry(
        id=entry_id,
        kind=kind,
        text=text,
        source=valid_text(source) if isinstance(source, str) else "",
        ts=_as_ts(item.get("ts")),
        keys=clean_keys(item.get("keys")),
        context=_as_context(item.get("context")),
        project=_as_project(item.get("project")),
        extra=_extra(item),
    )


def _as_project(value: object) -> str | None:
    return valid_text(value.strip()) if isinstance(value, str) and value.strip() else None


def _extra(item: dict[str, Any]) -> str:
    unknown = {name: value for name, value in item.items() if name not in KNOWN_FIELDS}
    return _dumps(unknown) if unknown else ""


def _as_context(value: object) -> str:
    return " ".join(valid_text(value).split())[:MAX_CONTEXT] if isinstance(value, str) else ""


def _as_ts(value: object) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")):
        return max(int(value), 0)
    return 0
