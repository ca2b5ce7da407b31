"""What the store derives from entries, kept by entry id across file versions (SPEC §3.5).

- an entry's document (terms, lengths, duplicate key): made once, reused while its text, kind, keys
  and context are unchanged;
- an entry's JSON line: written once, reused while the entry is the same object;
- the entry of every line seen in the file or written: a file read again (another session wrote one
  entry) parses only its new lines.
Not thread-safe: the store calls it with its mutex held.
"""

from __future__ import annotations

import json

from nanohermes.memory.docs import Doc, make_doc
from nanohermes.memory.entry import (
    FORMAT_VERSION,
    Document,
    Entry,
    Kept,
    Known,
    entries_from_list,
    json_bytes,
    parse_document,
)
from nanohermes.memory.layout import split_document


class Derived:
    def __init__(self) -> None:
        self.known: Known = {}  # stored dict → entry, by id: an unchanged dict is not parsed again
        self.docs: dict[str, Doc] = {}
        self.lines: dict[str, tuple[Entry, bytes]] = {}
        self.by_line: dict[bytes, Entry] = {}
        self.analysed = 0  # documents made (not reused) so far: how much a load had to analyse

    def doc(self, entry: Entry, key: str | None = None) -> Doc:
        """The entry's document, reused by id when its text, kind, keys and context are unchanged."""
        cached = self.docs.get(entry.id)
        if cached is not None and cached.entry is entry:
            return cached
        if cached is not None and cached.same_source(entry):
            doc = Doc(entry, cached.tf, cached.main_len, cached.context_len, cached.key)
        else:
            doc = make_doc(entry, key)
            self.analysed += 1
        self.docs[entry.id] = doc
        return doc

    def line(self, entry: Entry) -> bytes:
        cached = self.lines.get(entry.id)
        if cached is not None and cached[0] is entry:
            return cached[1]
        data = entry.to_dict()
        line = json_bytes(data)
        self.lines[entry.id] = (entry, line)
        self.by_line[line] = entry
        self.known[entry.id] = (data, entry)  # json.loads of the line gives back an equal dict
        return line

    def parse(self, raw: bytes) -> Document:
        """The file's entries: line by line, reusing the entry of every line seen before, when the
        file is laid out as this program writes it; else (or when a line needs the whole file to
        decide, e.g. an id to derive) the whole document, which also says what is wrong."""
        split = split_document(raw)
        if split is None:
            return parse_document(raw, self.known)
        lines, top = split
        seen = self.by_line
        entries: list[Entry] = []
        kept: list[str] = []
        taken: set[str] = set()
        for line in lines:
            entry = seen.get(line)
            try:
                entry = entry or self.read_line(line, kept)
            except WholeFile:
                return parse_document(raw, self.known)
            if entry is None:
                continue  # an entry this version cannot use: kept as it is
            if entry.id in taken:
                return parse_document(raw, self.known)
            taken.add(entry.id)
            entries.append(entry)
        return Document(entries, FORMAT_VERSION, Kept(tuple(kept), top), by_line=True)

    def read_line(self, line: bytes, kept: list[str]) -> Entry | None:
        """The entry of a line not seen before, or None with the line appended to `kept` when this
        version cannot use it. WholeFile when only the whole document can decide."""
        entry = entry_of_line(line, kept, self.known)
        if entry is None:
            return None
        self.by_line[line] = entry
        self.lines[entry.id] = (entry, line)  # written back as it was read
        return entry

    def new_entries(self, lines: list[bytes], taken: dict[str, int]) -> list[Entry] | None:
        """The entries of lines appended to a file whose other entries' ids are `taken`, or None
        when one of them needs the whole file (a kept entry, an id to derive, an id taken)."""
        entries: list[Entry] = []
        seen: set[str] = set()
        for line in lines:
            try:
                entry = self.by_line.get(line) or self.read_line(line, [])
            except WholeFile:
                return None
            if entry is None or entry.id in taken or entry.id in seen:
                return None
            seen.add(entry.id)
            entries.append(entry)
        return entries

    def forget_stale(self, entries: list[Entry]) -> None:
        """Drop derived data of entries gone from the file, once it outweighs the live data."""
        bound = 2 * len(entries) + 64
        if max(len(self.docs), len(self.known), len(self.lines), len(self.by_line)) > bound:
            ids = {entry.id for entry in entries}
            self.docs = {i: d for i, d in self.docs.items() if i in ids}
            self.known = {i: k for i, k in self.known.items() if i in ids}
            self.lines = {i: line for i, line in self.lines.items() if i in ids}
            self.by_line = {line: entry for entry, line in self.lines.values()}


class WholeFile(Exception):
    """A line the line-by-line parse cannot decide alone."""


def entry_of_line(line: bytes, kept: list[str], known: Known | None = None) -> Entry | None:
    """The entry of one entry line of memory.json, or None with the line appended to `kept` when
    this version cannot use it. WholeFile when only the whole document can decide (the line is not
    JSON, or its id must be derived: that depends on the other entries)."""
    try:
        item = json.loads(line)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise WholeFile from None  # its parse says what is wrong with the file
    count = len(kept)
    found = entries_from_list([item], known, kept)
    if not found:
        if len(kept) > count:
            return None
        raise WholeFile
    entry = found[0]
    if not isinstance(item, dict) or entry.id != item.get("id"):
        raise WholeFile
    return entry
