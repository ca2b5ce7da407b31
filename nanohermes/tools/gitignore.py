"""The .gitignore subset that list_files and grep honour, and glob patterns as regexes.

Supported: comments, blank lines, `!` negation, trailing `/` (directories only), anchoring by a leading
or inner `/`, `*`, `?`, `[...]`, `**` — in every .gitignore from the root down, the last matching rule
winning (`is_ignored`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


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
