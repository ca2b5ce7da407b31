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
from typing import TYPE_CHECKING

from nanohermes.errors import ToolError
from nanohermes.tools.base import CallContext
from nanohermes.tools.files import SNIFF_BYTES, looks_binary
from nanohermes.tools.paths import SAFE_WALK, Workspace, is_special

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
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def glob_to_regex(pattern: str) -> str:
    """Translate a gitignore-style glob (`*`, `?`, `[..]`, `**`) to a regex body (no anchors)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and _bracket_end(pattern, i) > 0:
            end = _bracket_end(pattern, i)
            body = pattern[i + 1 : end]
            body = "^" + body[1:] if body[:1] in ("!", "^") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        elif char == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _bracket_end(pattern: str, start: int) -> int:
    """Index of the `]` closing the class opened at `start`, or -1 (then `[` is literal)."""
    j = start + 1
    if pattern[j : j + 1] in ("!", "^"):
        j += 1
    if pattern[j : j + 1] == "]":
        j += 1
    return pattern.find("]", j)


@dataclass(frozen=True)
class Rule:
    base: str
    """Directory of the .gitignore, relative to the root ("" for the root)."""
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        if self.base:
            if not rel.startswith(self.base + "/"):
                return False
            rel = rel[len(self.base) + 1 :]
        return self.regex.fullmatch(rel) is not None


def parse_gitignore(text: str, base: str = "") -> list[Rule]:
    rules: list[Rule] = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line.strip() or line.startswith("#"):
            continue
        line = _strip_trailing_spaces(line)
        negate = line.startswith("!")
        if negate or line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        body = glob_to_regex(line.lstrip("/"))
        try:
            regex = re.compile(body if anchored else f"(?:.*/)?{body}")
        except re.error:
            continue  # git ignores patterns it cannot parse; so do we
        rules.append(Rule(base, regex, negate, dir_only))
    return rules


def _strip_trailing_spaces(line: str) -> str:
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        return stripped + " "
    return stripped


def is_ignored(rules: list[Rule], rel: str, is_dir: bool) -> bool:
    ignored = False
    for rule in rules:
        if rule.matches(rel, is_dir):
            ignored = not rule.negate
    return ignored


@dataclass(frozen=True)
class Found:
    rel: str
    """Path relative to the workspace root (posix)."""
    is_dir: bool


class Walker:
    """Yields the workspace entries under a directory that git would not ignore."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def walk(self, start: Path, ctx: CallContext) -> Iterator[Found]:
        rules = self._rules_above(start)
        base = self.workspace.relative(start) if start != self.workspace.root else ""
        if SAFE_WALK:
            with self.workspace.dir_fd(start) as fd:
                yield from self._walk_fd(fd, base, rules, ctx)
        else:
            yield from self._walk_path(start, base, rules, ctx)

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

    def _walk_fd(self, fd: int, base: str, rules: list[Rule], ctx: CallContext) -> Iterator[Found]:
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
            yield Found(rel, is_dir)
            if is_dir:
                yield from self._descend(fd, name, rel, rules, ctx)

    def _descend(self, fd: int, name: str, rel: str, rules: list[Rule], ctx: CallContext) -> Iterator[Found]:
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            child = os.open(name, flags, dir_fd=fd)
        except OSError:
            return  # replaced by a symlink or removed meanwhile: not followed
        try:
            yield from self._walk_fd(child, rel, rules, ctx)
        finally:
            os.close(child)

    def _walk_path(self, directory: Path, base: str, rules: list[Rule], ctx: CallContext) -> Iterator[Found]:
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
            yield Found(rel, is_dir)
            if is_dir:
                yield from self._walk_path(Path(entry.path), rel, rules, ctx)


def glob_filter(glob: str | None) -> re.Pattern[str] | None:
    """A `glob` argument as a regex: without `/` it matches file names, with `/` relative paths."""
    if not glob:
        return None
    body = glob_to_regex(glob.lstrip("/"))
    try:
        return re.compile(body if "/" in glob else f"(?:.*/)?{body}")
    except re.error:
        raise ToolError(f"invalid glob {glob!r}") from None


def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """`pattern` compiled by the `regex` engine (Python `re` syntax), whose searches take a timeout
    and release the GIL, so a catastrophic pattern can be stopped and never freezes Ctrl-C."""
    import regex  # imported on the first grep only

    try:
        return regex.compile(pattern, regex.VERSION0)
    except regex.error as err:
        raise ToolError(f"invalid regular expression {pattern!r}: {err}") from None
    except (RecursionError, OverflowError, ValueError):
        raise ToolError(f"regular expression {pattern!r} is too complex") from None


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
        for found in self.walker.walk(start, ctx):
            if found.is_dir or (wanted and not wanted.fullmatch(found.rel)):
                continue
            total += 1
            if len(shown) < LIST_MAX_ENTRIES:
                shown.append(found.rel)
        if not shown:
            return f"no files{' matching ' + repr(glob) if glob else ''} under {path}"
        if total > len(shown):
            shown.append(f"[… {total - len(shown)} more files; narrow it with path or glob]")
        return "\n".join(shown)

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
        files: Iterator[Path]
        if resolved.is_dir():
            files = (
                self.workspace.root / found.rel
                for found in self.walker.walk(resolved, ctx)
                if not found.is_dir and not (wanted and not wanted.fullmatch(found.rel))
            )
        else:
            os.close(self.workspace.open_file(resolved, os.O_RDONLY))  # a FIFO or device: ERROR
            files = iter([resolved])
        return self._grep_files(compiled, files, pattern, ctx)

    def _grep_files(
        self, compiled: regex.Pattern[str], files: Iterator[Path], pattern: str, ctx: CallContext
    ) -> str:
        hits: list[str] = []
        more = 0
        for file in files:
            ctx.cancel.raise_if_cancelled()
            for line_no, line in self._search_file(file, compiled, pattern, ctx):
                if len(hits) >= GREP_MAX_MATCHES:
                    more += 1
                    continue
                if len(line) > GREP_MAX_LINE_CHARS:
                    line = line[:GREP_MAX_LINE_CHARS] + " […]"
                hits.append(f"{self.workspace.relative(file)}:{line_no}: {line}")
        if not hits:
            return f"no matches for {pattern!r}"
        if more:
            hits.append(f"[… {more} more matches not shown; narrow the pattern, path or glob]")
        return "\n".join(hits)

    def _search_file(
        self, file: Path, compiled: regex.Pattern[str], pattern: str, ctx: CallContext
    ) -> Iterator[tuple[int, str]]:
        try:
            real = file.resolve()
            if not self.workspace.allows(real, ctx.granted):
                return  # a symlink pointing out of the workspace
            fd = self.workspace.open_file(real, os.O_RDONLY)
        except (ToolError, OSError):
            return
        with os.fdopen(fd, "rb") as handle:
            if os.fstat(fd).st_size > GREP_MAX_FILE_BYTES or looks_binary(handle.read(SNIFF_BYTES)):
                return
            handle.seek(0)
            deadline = time.monotonic() + self.file_seconds
            for number, raw in enumerate(handle, start=1):
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
                        f"{self.workspace.relative(real)} (line {number}) and was stopped",
                        hint="simplify it: nested repetition such as (a|aa)+ backtracks exponentially",
                    ) from None
                if found:
                    yield number, line

    def _directory(self, path: str, ctx: CallContext) -> Path:
        resolved = self.workspace.resolve(path, ctx.granted)
        if not resolved.exists():
            raise ToolError(f"{path}: no such directory")
        if not resolved.is_dir():
            raise ToolError(f"{path} is not a directory (use read_file for files)")
        return resolved
