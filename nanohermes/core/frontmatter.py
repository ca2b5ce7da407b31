"""Markdown files with a front matter (sub-agents, custom commands, skills). Only what these files use
of YAML: `key: value` lines, `- item` lines after a key with no value (joined with ", "), and indented
lines that go on with the last key's value (`description: >-`, a `metadata:` map)."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TypeVar

from nanohermes.core.errors import reason
from nanohermes.core.fileio import read_small_text, resolved
from nanohermes.core.markers import INVISIBLE
from nanohermes.core.types import shorten

NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A command's or a skill's name: what a slash command or a tool argument can carry as it is."""
# control, invisible and tag characters: text the user cannot see in an editor but the model reads
_UNSAFE = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{INVISIBLE}\U000e0000-\U000e007f]")
_BLOCK_SCALAR = re.compile(r"[|>][-+]?")
T = TypeVar("T")


def front_matter(text: str, keys: Collection[str]) -> tuple[dict[str, str], str]:
    """(values by key, body). Raises ValueError for an unknown or repeated key, a line that is not
    `key: value`, or a front matter never closed."""
    if not text.startswith("---"):
        return {}, text
    header, sep, rest = text[3:].partition("\n---")
    if not sep:
        raise ValueError("front matter opened with --- but never closed")
    meta: dict[str, str] = {}
    key, listing = "", False  # the last key; whether `- item` lines extend it (it had no value)
    for raw in header.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if listing and line.startswith("-"):
            meta[key] = f"{meta[key]}, {line[1:].strip()}".lstrip(", ")
            continue
        if key and raw[0].isspace():
            meta[key] = f"{meta[key]} {line}".lstrip()
            continue
        name, colon, value = line.partition(":")
        key, value = name.strip().lower(), value.strip()
        if not colon:
            raise ValueError(f"front matter line without 'key: value': {shorten(line, 80)!r}")
        if key not in keys:
            known = ", ".join(keys)
            raise ValueError(f"unknown front matter key {shorten(key, 40)!r}; known: {known}")
        if key in meta:
            raise ValueError(f"front matter key {key!r} is given twice")
        meta[key] = "" if _BLOCK_SCALAR.fullmatch(value) else value
        listing = not value
    return meta, rest.strip()


def unquote(value: str) -> str:
    quoted = len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'"
    return value[1:-1].strip() if quoted else value


def read_definition(path: Path, limit: int, inside: Path | None = None) -> str:
    """UTF-8, at most `limit` bytes, without a BOM or an invisible character. With `inside`, its real
    path must be in there: a cloned repository's file linking to ~/.ssh/id_rsa is not read. Raises
    OSError or ValueError."""
    if inside is not None and not resolved(path).is_relative_to(resolved(inside)):
        raise ValueError(f"it links to {resolved(path)}, outside the workspace")
    text = read_small_text(path, limit).removeprefix("\ufeff")  # a BOM (Windows editors) is no text
    unsafe = _UNSAFE.search(text)
    if unsafe:
        line = text.count("\n", 0, unsafe.start()) + 1
        raise ValueError(f"line {line} holds the control or invisible character U+{ord(unsafe[0]):04X}")
    return text


def skipped(what: str, path: Path, err: OSError | ValueError) -> str:
    if isinstance(err, UnicodeDecodeError):
        why = f"not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset {err.start})"
    else:
        why = reason(err)
    return f"{what} {path} skipped: {why}"


def markdown_files(pattern: str, directory: Path) -> list[Path]:
    """Sorted; none when `directory` is missing or unreadable."""
    try:
        return sorted(directory.glob(pattern)) if directory.is_dir() else []
    except OSError:
        return []


def load_definitions(
    kind: str,
    pattern: str,
    what: str,
    workspace: Path,
    state_dir: Path,
    parse: Callable[[Path, Path | None], T],
    most: int | None = None,
) -> tuple[dict[str, T], list[str]]:
    """Each definition of `kind` by NAME, the project's first (it wins a name) then the user's, at most
    `most`, and a note per file skipped. `parse` raises OSError or ValueError."""
    found: dict[str, T] = {}
    notes: list[str] = []
    unlisted = 0
    # a project's file must stay inside the workspace; the user's own may link anywhere
    for directory, inside in ((workspace / ".nanohermes" / kind, workspace), (state_dir / kind, None)):
        for path in markdown_files(pattern, directory):
            parts = path.relative_to(directory).parts
            name = parts[0] if len(parts) > 1 else path.stem
            if name in found:
                continue
            if most is not None and len(found) == most:
                unlisted += 1
                continue
            try:
                if not NAME.fullmatch(name):
                    raise ValueError("its name may hold only letters, digits, '-' and '_' (at most 64)")
                found[name] = parse(path, inside)
            except (OSError, ValueError) as err:
                notes.append(skipped(what, path, err))
    if unlisted:
        notes.append(f"{unlisted} more {kind} skipped: at most {most} are listed")
    return found, notes
