"""memory.cache: the search index of memory.json on disk, for the first search of a new process.

Analysing and indexing every entry costs far more than reading the file (a few hundred ms at 5,000
entries against a few ms of `json.loads`), and a new process (`-p`, a new REPL, a sub-agent) would
pay it before its first answer. The cache keeps what a search needs, laid out so that loading it
builds almost nothing:

    a header (one JSON line): format, fingerprint, entry count, projects, per-scope totals, the
      length and CRC-32 of memory.json up to the end of the last cached entry line, section sizes,
      the CRC-32 of the sections;
    meta: per cached entry (slot, in file order) five little-endian int64: weighted main and context
      lengths, ts, project (-1: global) and the byte offset of its line in memory.json;
    keys: per slot an int64 key of its line's bytes (`line_key`);
    ids: the entries' ids, a JSON list (read only when lines changed);
    postings: per term a line «term<TAB>slot tf slot tf …», found with one bytes search when a query
      holds the term.

It is only a cache: written after a full load that had to analyse many entries (never by
`remember`, which stays cheap), atomically (temp file, rename; no fsync: a torn or stale cache is not
used), mode 0600, and never trusted beyond what it proves: its CRC must match, a cache from another
nanohermes or analyser (`fingerprint`) is ignored, a line whose bytes changed is not in it, and
anything unexpected in it means «no cache». Deleting it is always safe.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
import time
import zlib
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nanohermes.core.fileio import atomic_write
from nanohermes.memory.docs import Doc
from nanohermes.memory.layout import ENTRIES_END, ENTRIES_START, SEPARATOR

CACHE_FILE = "memory.cache"
CACHE_FORMAT = 2
MAX_CACHE_BYTES = 1 << 30


def size_limit(memory_bytes: int) -> int:
    """The largest cache worth reading for a memory.json of this size (ours is about 1.3 times it)."""
    return min(MAX_CACHE_BYTES, 16 * memory_bytes + (1 << 20))


META = 5
"""int64 per slot in the meta section: main length, context length, ts, project, line offset."""
GLOBAL = -1
"""The project of an entry without one."""
_MAX_INT64 = (1 << 63) - 1
"""What a meta field holds at most (array "q")."""
_TEMP_PREFIX = ".memory.cache."
_STALE_TEMP_SECONDS = 3600
_PROBE = "Makefiles deploying drew painted 部署脚本 用中文回复 Ünïcode x1 a_b café don't 🧘‍♀️ GPUs v2.1"


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
            sys.byteorder,
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
    """A loaded cache (see the module docstring)."""

    count: int
    meta: array  # type: ignore[type-arg]  # int64, META per slot
    keys: array  # type: ignore[type-arg]
    ids_json: bytes
    projects: list[str]
    totals: list[list[int]]
    """Per project index + 1 (0: global entries): [count, main length, context length]."""
    prefix: tuple[int, int] | None
    """(bytes, CRC-32) of memory.json up to the end of the last cached line; None when unknown."""
    terms: bytes  # the terms, sorted by their UTF-8 bytes, each followed by a newline
    term_at: array  # type: ignore[type-arg]  # int64: where each term starts in `terms`, then the end
    posting_at: array  # type: ignore[type-arg]  # int64: where each term's postings start, then the end
    postings: bytes
    _slot_of: dict[int, int] | None = field(default=None, repr=False)

    @property
    def owners(self) -> array:  # type: ignore[type-arg]
        """Each slot's project index (GLOBAL for none)."""
        return self.meta[3::META]

    def slot_of(self) -> dict[int, int]:
        """Each cached line's slot by its key (built on first use: only when lines changed)."""
        if self._slot_of is None:
            self._slot_of = {key: slot for slot, key in enumerate(self.keys)}
        return self._slot_of

    def ids(self) -> list[str]:
        """The cached entries' ids, by slot (read on first use: only when lines were added)."""
        found = json.loads(self.ids_json)
        if not isinstance(found, list) or len(found) != self.count:
            raise ValueError("the cache's ids do not match its entries")
        return found

    def decode(self, term: str) -> tuple[list[int], list[bytes]]:
        """The slots holding `term` (ascending) and its weighted tf in each, as written (b"2",
        b"1.5"): a binary search over the sorted terms, then one slice of the postings."""
        key, terms, term_at = term.encode(), self.terms, self.term_at
        low, high = 0, len(term_at) - 1
        while low < high:
            middle = (low + high) // 2
            if terms[term_at[middle] : term_at[middle + 1] - 1] < key:
                low = middle + 1
            else:
                high = middle
        if low == len(term_at) - 1 or terms[term_at[low] : term_at[low + 1] - 1] != key:
            return [], []
        parts = self.postings[self.posting_at[low] : self.posting_at[low + 1]].split(b" ")
        return list(map(int, parts[0::2])), parts[1::2]


def read(directory: Path, limit: int = MAX_CACHE_BYTES) -> Packed | None:
    """The cache of `directory`'s memory.json, or None when there is none, it is larger than
    `limit` bytes or it is not usable."""
    try:
        with open(directory / CACHE_FILE, "rb") as file:
            if os.fstat(file.fileno()).st_size > limit:
                return None
            data = file.read()
        return _packed(data)
    except (OSError, ValueError, RecursionError, TypeError, KeyError, IndexError):
        return None


def _packed(data: bytes) -> Packed | None:
    end = data.index(b"\n")
    header = json.loads(data[:end])
    if not isinstance(header, dict) or header.get("format") != CACHE_FORMAT:
        return None
    body = memoryview(data)[end + 1 :]
    if zlib.crc32(body) != header["checksum"] or header.get("fingerprint") != fingerprint():
        return None
    count, sizes = header["count"], header["sections"]
    if len(sizes) != 7 or sum(sizes) != len(body):
        return None
    sections, offset = [], 0
    for size in sizes:
        sections.append(body[offset : offset + size])
        offset += size
    meta, keys, term_at, posting_at = array("q"), array("q"), array("q"), array("q")
    meta.frombytes(sections[0])
    keys.frombytes(sections[1])
    term_at.frombytes(sections[4])
    posting_at.frombytes(sections[5])
    if len(meta) != META * count or len(keys) != count or not term_at or len(term_at) != len(posting_at):
        return None
    if term_at[-1] != sizes[3] or posting_at[-1] != sizes[6]:
        return None
    prefix = header["prefix"]
    projects, totals = header["projects"], header["totals"]
    if not isinstance(projects, list) or not isinstance(totals, list) or len(totals) != len(projects) + 1:
        return None
    owners = meta[3::META]
    if count and (min(owners) < GLOBAL or max(owners) >= len(projects)):
        return None
    return Packed(
        count,
        meta,
        keys,
        bytes(sections[2]),
        projects,
        totals,
        None if prefix is None else (int(prefix[0]), int(prefix[1])),
        bytes(sections[3]),
        term_at,
        posting_at,
        bytes(sections[6]),
    )


def write(directory: Path, lines: Sequence[bytes], docs: Sequence[Doc], raw: bytes | None) -> bool:
    """Write the cache of the entries `docs` (their JSON `lines`, file order; `raw`: the file they
    were read from, when it holds exactly these lines). False when it could not be written (a full
    disk, a read-only directory): the store works the same without it."""
    if any(not 0 <= doc.entry.ts <= _MAX_INT64 for doc in docs):
        return False  # a hand-edited ts beyond int64 (10**30): the store works the same without a cache
    offsets = _offsets(lines, raw)
    projects: dict[str, int] = {}
    totals = [[0, 0, 0]]
    meta = array("q")
    postings: dict[str, list[str]] = {}
    for slot, doc in enumerate(docs):
        entry = doc.entry
        project = GLOBAL
        if entry.project is not None:
            project = projects.setdefault(entry.project, len(projects))
            if project + 1 == len(totals):
                totals.append([0, 0, 0])
        scope = totals[project + 1]
        scope[0] += 1
        scope[1] += doc.main_len
        scope[2] += doc.context_len
        meta.extend((doc.main_len, doc.context_len, entry.ts, project, offsets[slot]))
        prefix = f"{slot} "
        for term, tf in doc.tf.items():
            text = prefix + repr(tf)  # an int count stays "2", a weighted one "2.5" or "2.0"
            found = postings.get(term)
            if found is None:
                postings[term] = [text]
            else:
                found.append(text)
    sections = [
        meta.tobytes(),
        array("q", map(line_key, lines)).tobytes(),
        json.dumps([doc.entry.id for doc in docs], ensure_ascii=False).encode(),
        *_term_sections(postings),
    ]
    end = offsets[-1] + len(lines[-1]) if raw is not None and lines and offsets[-1] >= 0 else -1
    header = {
        "format": CACHE_FORMAT,
        "fingerprint": fingerprint(),
        "count": len(docs),
        "projects": list(projects),
        "totals": totals,
        "prefix": None if raw is None or end < 0 else [end, zlib.crc32(memoryview(raw)[:end])],
        "sections": [len(section) for section in sections],
        "checksum": functools.reduce(lambda crc, section: zlib.crc32(section, crc), sections, 0),
    }
    data = [json.dumps(header, ensure_ascii=False).encode() + b"\n", *sections]
    return _replace(directory, b"".join(data))


def _term_sections(postings: dict[str, list[str]]) -> list[bytes]:
    """The terms (sorted by their bytes, a newline after each), where each starts, where each
    one's postings start, and the postings «slot tf slot tf …» one after another."""
    terms: list[bytes] = []
    texts: list[bytes] = []
    term_at, posting_at = array("q", [0]), array("q", [0])
    for term, parts in sorted((term.encode(), parts) for term, parts in postings.items()):
        terms.append(term + b"\n")
        term_at.append(term_at[-1] + len(term) + 1)
        text = " ".join(parts).encode()
        texts.append(text)
        posting_at.append(posting_at[-1] + len(text))
    return [b"".join(terms), term_at.tobytes(), posting_at.tobytes(), b"".join(texts)]


def _offsets(lines: Sequence[bytes], raw: bytes | None) -> list[int]:
    """Each line's byte offset in `raw` when `raw` lays them out one after another as this program
    writes memory.json (no other lines between or after them), else -1 each."""
    unknown = [-1] * len(lines)
    if raw is None or not lines or not raw.startswith(ENTRIES_START):
        return unknown
    offsets: list[int] = []
    start, gap = len(ENTRIES_START), len(SEPARATOR)
    for line in lines:
        offsets.append(start)
        start += len(line) + gap
    end = start - gap
    if not raw.startswith(ENTRIES_END, end) or raw[len(ENTRIES_START) : end] != SEPARATOR.join(lines):
        return unknown
    return offsets


def _replace(directory: Path, data: bytes) -> bool:
    try:
        atomic_write(directory / CACHE_FILE, data, temp_prefix=_TEMP_PREFIX, durable=False)
    except OSError:
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
