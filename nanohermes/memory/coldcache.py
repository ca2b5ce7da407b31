"""memory.cache: the search index of memory.json on disk, for the first search of a new process.

Analysing and indexing every entry costs far more than reading the file (a few hundred ms at 5,000
entries against a few ms of `json.loads`), and a new process (`-p`, a new REPL, a sub-agent) pays it
before its first answer. The cache keeps what a search needs, packed so that loading it builds
almost no Python objects:
- per entry line of memory.json (in file order), a key of its bytes (`line_key`), its id, weighted
  field lengths, `ts` and project;
- per term, its postings as one string «slot tf slot tf …», decoded only when a query holds it.

It is only a cache: it is written after a full load that had to analyse many entries (never by
`remember`, which stays cheap), atomically (temp file, rename; no fsync: a torn or stale cache is
just not used), mode 0600, and never trusted beyond what it proves: a line whose bytes changed is not
in it, a cache from another nanohermes or analyser (`fingerprint`) is ignored, and anything
unexpected in it means «no cache». Deleting it is always safe.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nanohermes.memory.docs import Doc

CACHE_FILE = "memory.cache"
CACHE_FORMAT = 1
MAX_CACHE_BYTES = 256 << 20  # a cache this big is not ours to load
_TEMP_PREFIX = ".memory.cache."
_STALE_TEMP_SECONDS = 3600
_PROBE = "Makefiles deploying drew painted 部署脚本 用中文回复 Ünïcode x1 a_b café don't 🧘‍♀️ GPUs v2.1"
GLOBAL = -1
"""The project index of an entry without a project."""


def line_key(line: bytes) -> int:
    """A key of an entry line's bytes: its CRC-32 and its length (a changed line gets a new key)."""
    return zlib.crc32(line) | len(line) << 32


@functools.cache
def fingerprint() -> str:
    """What the cached terms depend on: this format, the program's version, the analyser's tables and
    what it makes of a probe text (stemmer, tokenizer), the context weight and the kinds' labels."""
    from nanohermes import __version__
    from nanohermes.memory import analysis
    from nanohermes.memory.constants import CONTEXT_WEIGHT
    from nanohermes.memory.docs import _LABEL_TERMS

    material = repr(
        (
            CACHE_FORMAT,
            __version__,
            sorted(analysis.STOP_EN),
            sorted(analysis.STOP_ZH),
            sorted(analysis._IRREGULAR.items()),
            analysis.analyze(_PROBE),
            CONTEXT_WEIGHT,
            sorted((kind.value, terms) for kind, terms in _LABEL_TERMS.items()),
        )
    )
    return hashlib.blake2b(material.encode(), digest_size=16).hexdigest()


@dataclass
class Packed:
    """A loaded cache. Parallel lists by slot (the cached entry lines in file order)."""

    keys: list[int]
    ids: list[str]
    main_len: list[int]
    context_len: list[int]
    ts: list[int]
    project: list[int]  # index into `projects`, or GLOBAL
    projects: list[str]
    postings: dict[str, str]
    slot_of: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.slot_of = {key: slot for slot, key in enumerate(self.keys)}

    def decode(self, term: str) -> tuple[list[int], list[str]]:
        """The slots holding `term` and its weighted tf in each, as written ("2", "1.5")."""
        packed = self.postings.get(term)
        if not packed:
            return [], []
        parts = packed.split(" ")
        return list(map(int, parts[0::2])), parts[1::2]


def read(directory: Path) -> Packed | None:
    """The cache of `directory`'s memory.json, or None when there is none or it is not usable."""
    try:
        with open(directory / CACHE_FILE, "rb") as file:
            if os.fstat(file.fileno()).st_size > MAX_CACHE_BYTES:
                return None
            data = json.loads(file.read())
        return _packed(data)
    except (OSError, ValueError, RecursionError, TypeError, KeyError):
        return None


def _packed(data: object) -> Packed | None:
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
        return None
    if data.get("fingerprint") != fingerprint():
        return None
    keys, ids, meta, projects, postings = (
        data["keys"],
        data["ids"],
        data["meta"],
        data["projects"],
        data["postings"],
    )
    count = len(keys)
    if not (
        _all(keys, int)
        and _all(ids, str)
        and _all(meta, int)
        and _all(projects, str)
        and isinstance(postings, dict)
        and _all(list(postings.values()), str)
        and len(ids) == count
        and len(meta) == 4 * count
        and len(set(ids)) == count
        and len(set(keys)) == count
    ):
        return None
    packed = Packed(keys, ids, meta[0::4], meta[1::4], meta[2::4], meta[3::4], projects, postings)
    if any(not GLOBAL <= p < len(projects) for p in packed.project):
        return None
    return packed


def _all(values: object, kind: type) -> bool:
    return isinstance(values, list) and all(type(value) is kind for value in values)


def write(directory: Path, lines: Sequence[bytes], docs: Sequence[Doc]) -> bool:
    """Write the cache of the entries `docs` (their JSON `lines`, file order). False when it could
    not be written (a full disk, a read-only directory): the store works the same without it."""
    projects: dict[str, int] = {}
    meta: list[int] = []
    postings: dict[str, list[str]] = {}
    for slot, doc in enumerate(docs):
        entry = doc.entry
        project = GLOBAL if entry.project is None else projects.setdefault(entry.project, len(projects))
        meta += (doc.main_len, doc.context_len, entry.ts, project)
        prefix = f"{slot} "
        for term, tf in doc.tf.items():
            text = prefix + repr(tf)  # an int count stays "2", a weighted one "2.5" or "2.0"
            found = postings.get(term)
            if found is None:
                postings[term] = [text]
            else:
                found.append(text)
    document = {
        "format": CACHE_FORMAT,
        "fingerprint": fingerprint(),
        "keys": [line_key(line) for line in lines],
        "ids": [doc.entry.id for doc in docs],
        "meta": meta,
        "projects": list(projects),
        "postings": {term: " ".join(parts) for term, parts in postings.items()},
    }
    data = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
    return _replace(directory, data)


def _replace(directory: Path, data: bytes) -> bool:
    try:
        fd, temp = tempfile.mkstemp(dir=directory, prefix=_TEMP_PREFIX, suffix=".tmp")
    except OSError:
        return False
    try:
        with open(fd, "wb") as file:
            if os.name == "posix":
                os.fchmod(file.fileno(), 0o600)
            file.write(data)
        os.replace(temp, directory / CACHE_FILE)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        return False
    _remove_stale_temps(directory)
    return True


def _remove_stale_temps(directory: Path) -> None:
    """Temp files of a writer killed mid-write (an hour old: no live writer takes that long)."""
    with contextlib.suppress(OSError), os.scandir(directory) as found:
        for item in found:
            if item.name.startswith(_TEMP_PREFIX) and item.name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    if item.stat().st_mtime < time.time() - _STALE_TEMP_SECONDS:
                        os.unlink(item.path)
