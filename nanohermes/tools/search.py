"""list_files and grep: walk the workspace the way git sees it (.gitignore honoured, .git skipped),
through descriptors without following symlinks (one swapped in meanwhile cannot lead outside).
FIFOs, sockets and devices are never opened."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from nanohermes.core.errors import ToolError
from nanohermes.core.types import shorten
from nanohermes.tools.base import CallContext
from nanohermes.tools.files import SNIFF_BYTES, looks_binary
from nanohermes.tools.gitignore import Glob, Rule, is_ignored, parse_gitignore
from nanohermes.tools.paths import (
    SAFE_WALK,
    Workspace,
    existing_mode,
    is_special,
    open_regular,
    shown_path,
    step_into,
)

if TYPE_CHECKING:
    import regex

LIST_MAX_ENTRIES = 1000
GREP_MAX_MATCHES = 200
GREP_MAX_LINE_CHARS = 300
GREP_MAX_FILE_BYTES = 16 * 1024 * 1024
GREP_FILE_SECONDS = 3.0  # per file: a pattern that backtracks catastrophically is stopped
GREP_MAX_PATTERN_UNITS = 100_000  # a pattern whose counted repeats unroll past this is refused (memory)
GITIGNORE_MAX_BYTES = 1024 * 1024
MAX_DEPTH = 100  # deeper directories are not entered: a chain of hundreds would exhaust the stack
TOO_DEEP = f"not entered, more than {MAX_DEPTH} directories deep"
TOO_BIG = f"not searched, larger than {GREP_MAX_FILE_BYTES // 2**20} MB"

Where = int | Path  # a directory being walked: its descriptor (SAFE_WALK), else its path


class SearchTools:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def list_files(self, path: str = ".", glob: str | None = None, *, ctx: CallContext) -> str:
        """List the files under a directory of the workspace (recursively), skipping what .gitignore
        excludes and .git.

        Args:
            path: directory to list, relative to the workspace
            glob: only files matching this pattern, e.g. "*.py" or "src/**/*.ts"
        """
        start = self.workspace.resolve(path, ctx.granted)
        mode = existing_mode(start)
        if mode is None:
            raise ToolError(f"{path}: no such directory")
        if not stat.S_ISDIR(mode):
            raise ToolError(f"{path} is not a directory (use read_file for files)")
        deep: list[str] = []
        files = self._files(start, glob, deep, ctx)
        shown = [shown_path(rel) for rel in itertools.islice(files, LIST_MAX_ENTRIES)]
        if more := sum(1 for _ in files):
            shown.append(f"[… {more} more files; narrow it with path or glob]")
        if not shown:
            shown.append(f"no files{' matching ' + repr(glob) if glob else ''} under {path}")
        return "\n".join(shown + _note(deep, TOO_DEEP))

    def grep(self, pattern: str, path: str = ".", glob: str | None = None, *, ctx: CallContext) -> str:
        """Search file contents for a regular expression (Python syntax); prints path:line: text.

        Args:
            pattern: regular expression to search for
            path: file or directory to search, relative to the workspace
            glob: only search files matching this pattern, e.g. "*.py"
        """
        compiled = compile_pattern(pattern)
        resolved = self.workspace.resolve(path, ctx.granted)
        deep: list[str] = []
        files: Iterable[Path] = [resolved]
        if stat.S_ISDIR(existing_mode(resolved) or 0):
            files = (self.workspace.root / rel for rel in self._files(resolved, glob, deep, ctx))
        else:
            os.close(self.workspace.open_file(resolved))  # a FIFO or device: ERROR
        hits: list[str] = []
        more = 0
        big: list[str] = []
        for file in files:
            ctx.cancel.raise_if_cancelled()
            for line_no, line in self._search_file(file, compiled, pattern, big, ctx):
                if len(hits) >= GREP_MAX_MATCHES:
                    more += 1
                    continue
                cut = " […]" if len(line) > GREP_MAX_LINE_CHARS else ""
                hits.append(f"{self.workspace.shown(file)}:{line_no}: {line[:GREP_MAX_LINE_CHARS]}{cut}")
        if more:
            hits.append(f"[… {more} more matches not shown; narrow the pattern, path or glob]")
        found = "\n".join(hits) or f"no matches for {pattern!r}"
        advice = "; run_shell with grep can search them"
        return "\n".join([found, *_note(deep, TOO_DEEP), *_note(big, TOO_BIG, advice)])

    def _files(self, start: Path, glob: str | None, deep: list[str], ctx: CallContext) -> Iterator[str]:
        """The relative paths of the files under `start` that git would not ignore and `glob` matches
        (without `/` it matches file names, with `/` relative paths)."""
        wanted = Glob(glob.lstrip("/"), anchored="/" in glob) if glob else None
        rules: list[Rule] = []
        if start.is_relative_to(self.workspace.root):  # the .gitignore files above `start` count too
            parts = start.relative_to(self.workspace.root).parts
            for index in range(len(parts)):
                rules += _read_rules(self.workspace.root.joinpath(*parts[:index]), "/".join(parts[:index]))
        base = self.workspace.relative(start) if start != self.workspace.root else ""
        opened = self.workspace.dir_fd(start) if SAFE_WALK else contextlib.nullcontext(start)
        with opened as where:
            for rel in _walk(where, base, rules, deep, ctx, 1):
                if wanted is None or wanted.matches(rel):
                    yield rel

    def _search_file(
        self, file: Path, compiled: regex.Pattern[str], pattern: str, big: list[str], ctx: CallContext
    ) -> Iterator[tuple[int, str]]:
        try:
            real = file.resolve()
            if not self.workspace.allows(real, ctx.granted):
                return  # a symlink pointing out of the workspace
            fd = self.workspace.open_file(real)
        except (ToolError, OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
            return
        with os.fdopen(fd, "rb") as handle:
            if os.fstat(fd).st_size > GREP_MAX_FILE_BYTES:
                big.append(self.workspace.shown(real))  # said in the result: not "no matches"
                return
            data = handle.read(GREP_MAX_FILE_BYTES)  # no more, should it have grown since
        if looks_binary(data[:SNIFF_BYTES]):
            return
        deadline = time.monotonic() + GREP_FILE_SECONDS
        for number, raw in enumerate(data.removesuffix(b"\n").split(b"\n") if data else [], start=1):
            if number % 1024 == 0:
                ctx.cancel.raise_if_cancelled()
            line = raw.decode("utf-8", errors="replace").rstrip("\r")
            try:
                found = compiled.search(line, timeout=max(0.0, deadline - time.monotonic()), concurrent=True)
            except TimeoutError:
                raise ToolError(
                    f"pattern {pattern!r} took more than {GREP_FILE_SECONDS:g} s on "
                    f"{self.workspace.shown(real)} (line {number}) and was stopped",
                    hint="simplify it: nested repetition such as (a|aa)+ backtracks exponentially",
                ) from None
            if found:
                yield number, line


def _walk(
    where: Where, base: str, rules: list[Rule], deep: list[str], ctx: CallContext, depth: int
) -> Iterator[str]:
    """The files under `where` (relative path `base`) the rules keep; directories too deep go to `deep`."""
    ctx.cancel.raise_if_cancelled()
    rules = rules + _read_rules(where, base)
    try:
        with os.scandir(where) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if name == ".git":
            continue
        rel = f"{base}/{name}" if base else name
        try:
            mode = entry.stat(follow_symlinks=False).st_mode  # from the directory's descriptor
        except OSError:
            continue
        is_dir = stat.S_ISDIR(mode)
        if is_special(mode) or is_ignored(rules, rel, is_dir):
            continue
        if not is_dir:
            yield rel
        elif depth > MAX_DEPTH:
            deep.append(shown_path(rel))
        elif isinstance(where, Path):
            yield from _walk(where / name, rel, rules, deep, ctx, depth + 1)
        else:
            try:
                child = step_into(where, name, Path(rel))
            except ToolError:
                continue  # replaced by a symlink or removed meanwhile: not followed
            try:
                yield from _walk(child, rel, rules, deep, ctx, depth + 1)
            finally:
                os.close(child)


def _read_rules(where: Where, base: str) -> list[Rule]:
    """The rules of the .gitignore in `where`. Like git, only a regular file counts (not a symlink, and
    a FIFO is never opened): a hostile .gitignore cannot block or flood the walk."""
    parent, name = (where, ".gitignore") if isinstance(where, int) else (None, str(where / ".gitignore"))
    try:
        with os.fdopen(open_regular(name, parent, Path(name)), "rb") as handle:
            data = handle.read(GITIGNORE_MAX_BYTES)
    except (ToolError, OSError):
        return []
    return parse_gitignore(data.decode("utf-8", errors="replace"), base)


def _note(names: list[str], what: str, advice: str = "") -> list[str]:
    if not names:
        return []
    more = f" and {len(names) - 1} more" if len(names) > 1 else ""
    return [f"[{what}: {shorten(names[0], 120)}{more}{advice}]"]


def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """Compiled by `regex` (Python `re` syntax), whose searches take a timeout and release the GIL."""
    import regex  # imported on the first grep only

    if repeat_units(pattern) > GREP_MAX_PATTERN_UNITS:
        raise ToolError(
            f"regular expression {shorten(pattern, 80)!r} repeats too much "
            f"(nested counts multiply past {GREP_MAX_PATTERN_UNITS:,}); not run",
            hint="use smaller {n} counts",
        )
    try:
        return regex.compile(pattern, regex.VERSION0)
    except regex.error as err:
        raise ToolError(f"invalid regular expression {pattern!r}: {err}") from None
    except (RecursionError, OverflowError, ValueError):
        raise ToolError(f"regular expression {pattern!r} is too complex") from None


_COUNT = re.compile(r"\{(\d{0,9})(?:,(\d{0,9}))?\}")


def repeat_units(pattern: str) -> int:
    """About how many pieces `pattern` compiles to. The engine unrolls counted repeats, so nested
    ones multiply: `(?:(?:a{1000}){1000}){1000}`, 27 characters, would take tens of GB to compile."""
    totals = [0]  # one running size per open group
    last = 0  # the size of the piece a `{n}` after it repeats
    i = 0
    while i < len(pattern):
        char = pattern[i]
        count = _COUNT.match(pattern, i) if char == "{" else None
        if char == "(":
            totals.append(0)
            i += 1
            continue
        if char == ")" and len(totals) > 1:
            last = max(1, totals.pop())
            end = i + 1
        elif count and (count.group(1) or count.group(2)):
            times = max(int(count.group(1) or 0), int(count.group(2) or 0))
            totals[-1] += last * (times - 1)
            last *= times
            i = count.end()
            continue
        else:
            last = 1
            end = _class_end(pattern, i) + 1 if char == "[" else i + (2 if char == "\\" else 1)
        totals[-1] += last
        i = end
    return sum(totals)


def _class_end(pattern: str, start: int) -> int:
    i = start + 1
    i += pattern[i : i + 1] == "^"
    i += pattern[i : i + 1] == "]"
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return min(i, len(pattern) - 1)
