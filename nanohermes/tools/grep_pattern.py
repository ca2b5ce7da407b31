"""grep's regular expressions: compiled by the `regex` engine, with their size checked first."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from nanohermes.core.errors import ToolError
from nanohermes.core.types import shorten

if TYPE_CHECKING:
    import regex

GREP_MAX_PATTERN_UNITS = 100_000
"""A pattern whose counted repeats unroll past this many pieces is refused (memory)."""


def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """`pattern` compiled by the `regex` engine (Python `re` syntax), whose searches take a timeout
    and release the GIL, so a catastrophic pattern can be stopped and never freezes Ctrl-C."""
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
    """Index of the `]` closing the class opened at `start` (the pattern's end when there is none)."""
    i = start + 1
    i += pattern[i : i + 1] == "^"
    i += pattern[i : i + 1] == "]"
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return min(i, len(pattern) - 1)
