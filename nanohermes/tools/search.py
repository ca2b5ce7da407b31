"""list_files and grep: walk the workspace the way git sees it (.gitignore honoured, .git skipped).

Supported .gitignore subset: comments, blank lines, `!` negation, trailing `/` (directories only),
anchoring by a leading or inner `/`, `*`, `?`, `[...]`, `**` — in every .gitignore from the root
down, the last matching rule winning, and nothing re-included below an ignored directory (as git).
Directories are walked through descriptors without following symlinks, so a symlink swapped in
during the walk cannot lead outside the workspace.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from nanohermes.core.errors import ToolError
from nanohermes.core.types import shorten
from nanohermes.tools.base import CallContext
from nanohermes.tools.files import SNIFF_BYTES, looks_binary
from nanohermes.tools.gitignore import Glob, Rule, is_ignored, parse_gitignore
from nanohermes.tools.grep_pattern import compile_pattern
from nanohermes.tools.paths import SAFE_WALK, Workspace, existing_mode, is_special, shown_path

if TYPE_CHECKING:
    import regex

LIST_MAX_ENTRIES = 1000
GREP_MAX_MATCHES = 200
GREP_MAX_LINE_CHARS = 300
GREP_MAX_FILE_BYTES = 16 * 1024 * 1024
GREP_FILE_SECONDS = 3.0
"""Time limit for searching one file: a pattern that backtracks catastrophically is stopped."""
ALWAYS_SKIPPED = frozenset({".git"})
GITIGNORE_MAX_BYTES = 1024 * 1024
MAX_DEPTH = 100
"""Directories nested deeper than this below the walk's start are listed but not entered: a repository
holding a chain of hundreds of nested directories would otherwise exhaust the stack and fail the walk."""
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


@dataclass(frozen=True)
class Found:
    rel: str
    """Path relative to the workspace root (posix)."""
    is_dir: bool
    too_deep: bool = False
    """A directory nested deeper than MAX_DEPTH: not entered."""


class Walker:
    """Yields the workspace entries under a directory that git would not ignore."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def walk(self, start: Path, ctx: CallContext) -> Iterator[Found]:
        rules = self._rules_above(start)
        base = self.workspace.relative(start) if start != self.workspace.root else ""
        if SAFE_WALK:
            with self.workspace.dir_fd(start) as fd:
                yield from self._walk_fd(fd, base, rules, ctx, 1)
        else:
            yield from self._walk_path(start, base, rules, ctx, 1)

    def _rules_above(self, start: Path) -> list[Rule]:
        """Rules of the .gitignore files from the root down to (not including) `start`."""
        rules: list[Rule] = []
        if not start.is_relative_to(self.workspace.root):
            return rules
        current = self.workspace.root
        parts = start.relative_to(self.workspace.root).parts
        for index in range(len(parts)):
            rules += self._read_rules(current, "/".join(parts[:index]))
            current = current / parts[index]
        return rules

    def _read_rules(self, directory: Path, base: str, dir_fd: int | None = None) -> list[Rule]:
        """The rules of the .gitignore in `directory` (or the directory `dir_fd`). Like git, only a
        regular file counts: a symlink is not followed and a FIFO or a device is never read (the
        open does not wait for a writer), so a hostile .gitignore cannot block or flood the walk."""
        flags = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        try:
            if dir_fd is not None:
                fd = os.open(".gitignore", flags, dir_fd=dir_fd)
            else:
                fd = os.open(directory / ".gitignore", flags)
        except OSError:
            return []
        with os.fdopen(fd, "rb") as handle:
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return []
                if _NONBLOCK:
                    os.set_blocking(fd, True)
                data = handle.read(GITIGNORE_MAX_BYTES)
            except OSError:
                return []
        return parse_gitignore(data.decode("utf-8", errors="replace"), base)

    def _walk_fd(
        self, fd: int, base: str, rules: list[Rule], ctx: CallContext, depth: int
    ) -> Iterator[Found]:
        ctx.cancel.raise_if_cancelled()
        rules = rules + self._read_rules(Path(), base, dir_fd=fd)
        try:
            names = sorted(os.listdir(fd))
        except OSError:
            return
        for name in names:
            if name in ALWAYS_SKIPPED:
                continue
            rel = f"{base}/{name}" if base else name
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            if is_special(st.st_mode):
                continue  # FIFOs, sockets and devices are never listed nor opened
            is_dir = stat.S_ISDIR(st.st_mode)
            if is_ignored(rules, rel, is_dir):
                continue
            yield Found(rel, is_dir, is_dir and depth > MAX_DEPTH)
            if is_dir and depth <= MAX_DEPTH:
                yield from self._descend(fd, name, rel, rules, ctx, depth + 1)

    def _descend(
        self, fd: int, name: str, rel: str, rules: list[Rule], ctx: CallContext, depth: int
    ) -> Iterator[Found]:
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            child = os.open(name, flags, dir_fd=fd)
        except OSError:
            return  # replaced by a symlink or removed meanwhile: not followed
        try:
            yield from self._walk_fd(child, rel, rules, ctx, depth)
        finally:
            os.close(child)

    def _walk_path(
        self, directory: Path, base: str, rules: list[Rule], ctx: CallContext, depth: int
    ) -> Iterator[Found]:
        ctx.cancel.raise_if_cancelled()
        rules = rules + self._read_rules(directory, base)
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError:
            return
        for entry in entries:
            if entry.name in ALWAYS_SKIPPED:
                continue
            rel = f"{base}/{entry.name}" if base else entry.name
            try:
                if is_special(entry.stat(follow_symlinks=False).st_mode):
                    continue
            except OSError:
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            if is_ignored(rules, rel, is_dir):
                continue
            yield Found(rel, is_dir, is_dir and depth > MAX_DEPTH)
            if is_dir and depth <= MAX_DEPTH:
                yield from self._walk_path(Path(entry.path), rel, rules, ctx, depth + 1)


def _too_deep_note(deep: list[str]) -> list[str]:
    """A line saying which directories were too deep to enter, if any were."""
    if not deep:
        return []
    more = f" and {len(deep) - 1} more" if len(deep) > 1 else ""
    return [f"[not entered, more than {MAX_DEPTH} directories deep: {shorten(deep[0], 120)}{more}]"]


def _too_big_note(big: list[str]) -> list[str]:
    """A line naming the files too big to search, if there were any."""
    if not big:
        return []
    more = f" and {len(big) - 1} more" if len(big) > 1 else ""
    limit = GREP_MAX_FILE_BYTES // (1024 * 1024)
    return [
        f"[not searched, larger than {limit} MB: {shorten(big[0], 120)}{more}; "
        "run_shell with grep can search them]"
    ]


def glob_filter(glob: str | None) -> Glob | None:
    """A `glob` argument: without `/` it matches file names, with `/` relative paths."""
    if not glob:
        return None
    try:
        return Glob(glob.lstrip("/"), anchored="/" in glob)
    except re.error:
        raise ToolError(f"invalid glob {glob!r}") from None


class SearchTools:
    def __init__(self, workspace: Workspace, *, file_seconds: float = GREP_FILE_SECONDS) -> None:
        self.workspace = workspace
        self.walker = Walker(workspace)
        self.file_seconds = file_seconds

    def list_files(self, path: str = ".", glob: str | None = None, *, ctx: CallContext) -> str:
        """List the files under a directory of the workspace (recursively), skipping what .gitignore
        excludes and .git.

        Args:
            path: directory to list, relative to the workspace
            glob: only files matching this pattern, e.g. "*.py" or "src/**/*.ts"
        """
        start = self._directory(path, ctx)
        wanted = glob_filter(glob)
        shown: list[str] = []
        total = 0
        deep: list[str] = []
        for found in self.walker.walk(start, ctx):
            if found.too_deep:
                deep.append(shown_path(found.rel))
            if found.is_dir or (wanted and not wanted.matches(found.rel)):
                continue
            total += 1
            if len(shown) < LIST_MAX_ENTRIES:
                shown.append(shown_path(found.rel))
        if total > len(shown):
            shown.append(f"[… {total - len(shown)} more files; narrow it with path or glob]")
        if not shown:
            shown.append(f"no files{' matching ' + repr(glob) if glob else ''} under {path}")
        return "\n".join(shown + _too_deep_note(deep))

    def grep(self, pattern: str, path: str = ".", glob: str | None = None, *, ctx: CallContext) -> str:
        """Search file contents for a regular expression (Python syntax); prints path:line: text.

        Args:
            pattern: regular expression to search for
            path: file or directory to search, relative to the workspace
            glob: only search files matching this pattern, e.g. "*.py"
        """
        compiled = compile_pattern(pattern)
        resolved = self.workspace.resolve(path, ctx.granted)
        wanted = glob_filter(glob)
        deep: list[str] = []
        files: Iterator[Path]
        if stat.S_ISDIR(existing_mode(resolved) or 0):
            files = self._files_under(resolved, wanted, deep, ctx)
        else:
            os.close(self.workspace.open_file(resolved, os.O_RDONLY))  # a FIFO or device: ERROR
            files = iter([resolved])
        big: list[str] = []
        found = self._grep_files(compiled, files, pattern, big, ctx)
        return "\n".join([found, *_too_deep_note(deep), *_too_big_note(big)])

    def _files_under(
        self, directory: Path, wanted: Glob | None, deep: list[str], ctx: CallContext
    ) -> Iterator[Path]:
        """The files grep searches under `directory`; directories too deep to enter go to `deep`."""
        for found in self.walker.walk(directory, ctx):
            if found.too_deep:
                deep.append(shown_path(found.rel))
            if not found.is_dir and not (wanted and not wanted.matches(found.rel)):
                yield self.workspace.root / found.rel

    def _grep_files(
        self,
        compiled: regex.Pattern[str],
        files: Iterator[Path],
        pattern: str,
        big: list[str],
        ctx: CallContext,
    ) -> str:
        """The matches in `files`; files too big to search go to `big`."""
        hits: list[str] = []
        more = 0
        for file in files:
            ctx.cancel.raise_if_cancelled()
            for line_no, line in self._search_file(file, compiled, pattern, big, ctx):
                if len(hits) >= GREP_MAX_MATCHES:
                    more += 1
                    continue
                if len(line) > GREP_MAX_LINE_CHARS:
                    line = line[:GREP_MAX_LINE_CHARS] + " […]"
                hits.append(f"{self.workspace.shown(file)}:{line_no}: {line}")
        if not hits:
            return f"no matches for {pattern!r}"
        if more:
            hits.append(f"[… {more} more matches not shown; narrow the pattern, path or glob]")
        return "\n".join(hits)

    def _search_file(
        self, file: Path, compiled: regex.Pattern[str], pattern: str, big: list[str], ctx: CallContext
    ) -> Iterator[tuple[int, str]]:
        try:
            real = file.resolve()
            if not self.workspace.allows(real, ctx.granted):
                return  # a symlink pointing out of the workspace
            fd = self.workspace.open_file(real, os.O_RDONLY)
        except (ToolError, OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
            return
        with os.fdopen(fd, "rb") as handle:
            if os.fstat(fd).st_size > GREP_MAX_FILE_BYTES:
                big.append(self.workspace.shown(real))  # said in the result: not "no matches"
                return
            if looks_binary(handle.read(SNIFF_BYTES)):
                return
            handle.seek(0)
            deadline = time.monotonic() + self.file_seconds
            for number, raw in enumerate(_lines_within(handle, GREP_MAX_FILE_BYTES), start=1):
                if number % 1024 == 0:
                    ctx.cancel.raise_if_cancelled()
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                try:
                    found = compiled.search(
                        line, timeout=max(0.0, deadline - time.monotonic()), concurrent=True
                    )
                except TimeoutError:
                    raise ToolError(
                        f"pattern {pattern!r} took more than {self.file_seconds:g} s on "
                        f"{self.workspace.shown(real)} (line {number}) and was stopped",
                        hint="simplify it: nested repetition such as (a|aa)+ backtracks exponentially",
                    ) from None
                if found:
                    yield number, line

    def _directory(self, path: str, ctx: CallContext) -> Path:
        resolved = self.workspace.resolve(path, ctx.granted)
        mode = existing_mode(resolved)
        if mode is None:
            raise ToolError(f"{path}: no such directory")
        if not stat.S_ISDIR(mode):
            raise ToolError(f"{path} is not a directory (use read_file for files)")
        return resolved


def _lines_within(handle: BinaryIO, limit: int) -> Iterator[bytes]:
    """The lines of `handle` up to `limit` bytes in all: a file that grew after its size was checked
    (a log being written, one huge line appended) is never read whole into memory."""
    left = limit
    while left > 0 and (line := handle.readline(left)):
        left -= len(line)
        yield line
