"""read_file, write_file, edit_file — confined to the workspace, binary-safe, UTF-8 honest."""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import BinaryIO

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import ToolError
from nanohermes.tools.base import CallContext
from nanohermes.tools.paths import Workspace, existing_mode

READ_DEFAULT_LIMIT = 2000  # lines
READ_MAX_LINE_CHARS = 2000  # a longer line is cut
READ_COUNT_MAX_BYTES = 64 * 1024 * 1024  # in a bigger file, lines past the window are not counted
EDIT_MAX_BYTES = 8 * 1024 * 1024
CLOSEST_MAX_CHARS = 1000  # of `old` and of each window, compared for the closest-match hint...
CLOSEST_WORK = 20_000_000  # ...until the compared lengths' products add up to this (a fraction of a second)
SNIFF_BYTES = 8192
DIFF_MAX_LINES = 400
DIFF_LINE_CHARS = 500  # a new 5 MB file on one line was a 5 MB approval preview
_BARE_LF = re.compile(r"(?<!\r)\n")


def looks_binary(sample: bytes) -> bool:
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    try:
        sample.decode("utf-8")
        return False
    except UnicodeDecodeError as err:
        if err.start >= len(sample) - 4:  # a character cut by the sample's end
            return False
    control = sum(1 for byte in sample if byte < 32 and byte not in b"\t\n\r\f\b\x1b")
    return control / len(sample) > 0.10


def decode(data: bytes) -> tuple[str, bool]:
    """The text of `data`, and whether it was valid UTF-8 (else undecodable bytes became U+FFFD)."""
    try:
        return data.decode("utf-8"), True
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), False


def encode(text: str, what: str) -> bytes:
    """`text` as UTF-8; a lone surrogate (a JSON "\\ud800" escape) is a clear error, not a crash."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ToolError(
            f"{what} holds a lone surrogate ({text[err.start]!r}) that cannot be written as UTF-8; "
            "nothing was written"
        ) from None


def unified_diff(before: str | None, after: str, label: str) -> str:
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile="/dev/null" if before is None else f"a/{label}",
        tofile=f"b/{label}",
    )
    text = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    shown = [
        line
        if len(line) <= DIFF_LINE_CHARS
        else f"{line[:DIFF_LINE_CHARS]}… [{len(line) - DIFF_LINE_CHARS:,} more characters]"
        for line in text.splitlines()[: DIFF_MAX_LINES + 1]
    ]
    if len(shown) > DIFF_MAX_LINES:
        more = text.count("\n") - DIFF_MAX_LINES
        return "\n".join(shown[:DIFF_MAX_LINES]) + f"\n[… {more} more diff lines …]"
    return "\n".join(shown).rstrip("\n") or "(no change)"


class FileTools:
    def __init__(self, workspace: Workspace, max_chars: int = 20_000) -> None:
        self.workspace = workspace
        self.max_chars = max_chars

    def read_file(
        self, path: str, offset: int = 1, limit: int = READ_DEFAULT_LIMIT, *, ctx: CallContext
    ) -> str:
        """Read a text file from the workspace; lines come numbered like `cat -n`.

        Args:
            path: file path, relative to the workspace
            offset: first line to show (1-based)
            limit: how many lines to show at most
        """
        if offset < 1:
            raise ToolError("offset must be 1 or more (lines are numbered from 1)")
        if limit < 1:
            raise ToolError("limit must be 1 or more")
        resolved = self.workspace.resolve(path, ctx.granted)
        with os.fdopen(self.workspace.open_file(resolved), "rb") as handle:
            if looks_binary(handle.read(SNIFF_BYTES)):
                size = os.fstat(handle.fileno()).st_size
                raise ToolError(f"{path} is a binary file ({size} bytes); not shown")
            handle.seek(0)
            return self._numbered(handle, path, offset, limit, ctx.cancel)

    def _numbered(self, handle: BinaryIO, path: str, offset: int, limit: int, cancel: CancelToken) -> str:
        huge = os.fstat(handle.fileno()).st_size > READ_COUNT_MAX_BYTES
        out: list[str] = []
        used = number = 0
        last_shown = offset - 1
        exact = True
        budget = max(200, self.max_chars - 200)
        while (line := _read_line(handle, cancel)) is not None:
            number += 1
            if number % 1024 == 0:  # every line would cost a third of the reading
                cancel.raise_if_cancelled()
            past = number >= offset + limit or used > budget
            if past and huge:  # not counted to its end
                return self._footer(out, path, offset, last_shown, None, exact)
            if number < offset or past:
                continue
            text, valid = decode(line.rstrip(b"\r\n"))
            exact = exact and valid
            if len(text) > READ_MAX_LINE_CHARS:
                text = text[:READ_MAX_LINE_CHARS] + f" [… line cut at {READ_MAX_LINE_CHARS} characters]"
            out.append(f"{number:6}\t{text}")
            used += len(out[-1]) + 1
            last_shown = number
        return self._footer(out, path, offset, last_shown, number, exact)

    @staticmethod
    def _footer(out: list[str], path: str, offset: int, last: int, total: int | None, exact: bool) -> str:
        if total == 0:
            return f"{path} is empty"
        if total is not None and offset > total:
            raise ToolError(f"offset {offset} is past the end of {path} ({total} lines)")
        notes: list[str] = []
        if not exact:
            notes.append("[not valid UTF-8: undecodable bytes are shown as \ufffd]")
        if total is None or last < total:
            of = f"of {total}" if total is not None else "of a very large file"
            notes.append(f"[showing lines {offset}-{last} {of}; read on with offset={last + 1}]")
        return "\n".join(out + notes)

    def write_file(self, path: str, content: str, *, ctx: CallContext) -> str:
        """Create or overwrite a file in the workspace with the given content.

        Args:
            path: file path, relative to the workspace (missing directories are created)
            content: the complete new content of the file
        """
        resolved = self.workspace.resolve(path, ctx.granted)
        data = encode(content, "content")
        existed = existing_mode(resolved) is not None
        self.workspace.replace_into(resolved, data)
        lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        verb = "Overwrote" if existed else "Created"
        unit = "line" if lines == 1 else "lines"
        size = f"{len(content)} chars" + (f", {len(data)} bytes" if len(data) != len(content) else "")
        return f"{verb} {self.workspace.shown(resolved)} ({lines} {unit}, {size})"

    def preview_write(self, resolved: Path, content: str, current: str | None) -> str:
        """Diff for approval; `current`: the content as earlier calls of the batch will leave it."""
        before = current if current is not None else self._current_text(resolved)
        return unified_diff(before, content, self.workspace.shown(resolved))

    def edit_file(self, path: str, old: str, new: str, replace_all: bool = False, *, ctx: CallContext) -> str:
        """Replace an exact piece of text in a file. `old` must occur exactly once unless replace_all.

        Args:
            path: file path, relative to the workspace
            old: the exact text to replace, including whitespace; add surrounding lines to make it unique
            new: the replacement text
            replace_all: replace every occurrence instead of requiring exactly one
        """
        resolved = self.workspace.resolve(path, ctx.granted)
        text = self._editable_text(resolved, path)
        updated, count = apply_edit(text, old, new, replace_all, path)
        self.workspace.replace_into(resolved, encode(updated, "new"))
        where = f"{count} occurrences" if count > 1 else "1 occurrence"
        return f"Edited {self.workspace.shown(resolved)}: replaced {where}"

    def preview_edit(
        self, resolved: Path, current: str | None, path: str, old: str, new: str, replace_all: bool = False
    ) -> tuple[str, str]:
        """(diff, new text) for approval; raises ToolError when the edit would fail."""
        text = current if current is not None else self._editable_text(resolved, path)
        updated, _ = apply_edit(text, old, new, replace_all, path)
        return unified_diff(text, updated, self.workspace.shown(resolved)), updated

    def _read_whole(self, resolved: Path) -> bytes:
        """Up to EDIT_MAX_BYTES + 1 bytes: a longer file shows it is too long."""
        with os.fdopen(self.workspace.open_file(resolved), "rb") as handle:
            return handle.read(EDIT_MAX_BYTES + 1)

    def _editable_text(self, resolved: Path, path: str) -> str:
        data = self._read_whole(resolved)
        if len(data) > EDIT_MAX_BYTES:
            raise ToolError(f"{path} is larger than {EDIT_MAX_BYTES // (1024 * 1024)} MB; not edited")
        if looks_binary(data[:SNIFF_BYTES]):
            raise ToolError(f"{path} is a binary file; not edited")
        text, valid = decode(data)
        if not valid:
            raise ToolError(
                f"{path} is not valid UTF-8: an edit would not write back the same bytes; not edited "
                "(use run_shell with a byte-safe tool if it must change)"
            )
        return text

    def _current_text(self, resolved: Path) -> str | None:
        """The file's text for a diff, or None when it does not exist (binary shown as a note)."""
        try:
            data = self._read_whole(resolved)
        except ToolError:
            return None
        if looks_binary(data[:SNIFF_BYTES]) or len(data) > EDIT_MAX_BYTES:
            return f"(binary or very large file, {len(data)}+ bytes)\n"
        return decode(data)[0]


def _read_line(handle: BinaryIO, cancel: CancelToken, max_bytes: int = 64 * 1024) -> bytes | None:
    """The next line (cut at max_bytes, its rest skipped), or None at the end. Ctrl-C is checked at
    each chunk: skipping to a far offset of a huge (sparse, 10 GB) file takes minutes."""
    line = handle.readline(max_bytes)
    if not line:
        return None
    if not line.endswith(b"\n"):
        rest = handle.readline(max_bytes)
        if rest:  # cut mid-line, so maybe mid-character: that is no sign of bytes that are not UTF-8
            line = _whole_characters(line)
        while rest and not rest.endswith(b"\n"):
            cancel.raise_if_cancelled()
            rest = handle.readline(max_bytes)
    return line


def _whole_characters(data: bytes) -> bytes:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.reason == "unexpected end of data":
            return data[: err.start]
    return data


def apply_edit(text: str, old: str, new: str, replace_all: bool, path: str) -> tuple[str, int]:
    """Replace `old` by `new` in `text`. Raises ToolError (with the closest match) when it cannot."""
    if old == "":
        raise ToolError("old is empty: give the exact text to replace (use write_file to create a file)")
    if old == new:
        raise ToolError("old and new are the same: nothing to change")
    if old not in text and "\r\n" in text and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")  # the file uses CRLF
    if "\r\n" in text and text.count("\n") == text.count("\r\n"):
        new = _BARE_LF.sub("\r\n", new)  # new lines in an all-CRLF file end in CRLF too, never mixed
    count = text.count(old)
    grown = len(text) + (count if replace_all else 1) * (len(new) - len(old))
    if grown > EDIT_MAX_BYTES:  # one character short of the limit is a byte short at least
        raise ToolError(
            f"the edit would make {path} over {EDIT_MAX_BYTES // (1024 * 1024)} MB "
            f"({grown:,} characters); not edited"
        )
    if count == 0:
        raise ToolError(f"old text not found in {path}. {closest_match(text, old)}")
    if count > 1 and not replace_all:
        lines = _occurrence_lines(text, old)
        raise ToolError(
            f"old text occurs {count} times in {path} (lines {lines}); include more surrounding lines "
            "to make it unique, or set replace_all=true"
        )
    return text.replace(old, new) if replace_all else text.replace(old, new, 1), count


def _occurrence_lines(text: str, old: str, shown: int = 8) -> str:
    numbers: list[int] = []
    start = text.find(old)
    while start >= 0 and len(numbers) < shown:
        numbers.append(text.count("\n", 0, start) + 1)
        start = text.find(old, start + 1)
    return ", ".join(map(str, numbers)) + (", …" if text.count(old) > shown else "")


def closest_match(text: str, old: str, max_windows: int = 20_000) -> str:
    """Describe the lines of `text` most similar to `old`. Bounded by CLOSEST_MAX_CHARS and CLOSEST_WORK:
    `ratio` takes time in the product of the lengths, and a minified file would take hours."""
    lines = text.splitlines()
    wanted = old.strip("\n").splitlines() or [old]
    size = len(wanted)
    target = "\n".join(line.strip() for line in wanted)[:CLOSEST_MAX_CHARS]
    best, best_at = 0.0, -1
    work = 0
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(target)
    for start in range(0, max(1, min(len(lines) - size + 1, max_windows))):
        window = "\n".join(line.strip() for line in lines[start : start + size])[:CLOSEST_MAX_CHARS]
        matcher.set_seq1(window)
        if matcher.real_quick_ratio() <= best or matcher.quick_ratio() <= best:
            continue
        if work > CLOSEST_WORK:
            break
        work += len(window) * len(target)
        ratio = matcher.ratio()
        if ratio > best:
            best, best_at = ratio, start
    if best_at < 0 or best < 0.4:
        return "No similar text found; read the file again before editing."
    snippet = "\n".join(lines[best_at : best_at + size])
    if len(snippet) > 1500:
        snippet = snippet[:1500] + " […]"
    hint = " (it differs in whitespace only)" if "".join(snippet.split()) == "".join(old.split()) else ""
    return f"Closest match{hint}, lines {best_at + 1}-{best_at + size} ({best:.0%} similar):\n{snippet}"
