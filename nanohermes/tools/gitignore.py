"""The .gitignore subset that list_files and grep honour, and their glob patterns: comments, blank
lines, `!` negation, trailing `/` (directories only), anchoring by a leading or inner `/`, `*`, `?`,
`[...]`, `**`; in every .gitignore from the root down, the last matching rule wins."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass


class Glob:
    """A gitignore-style pattern, matched one path segment at a time, `**` segments followed as a set
    of states: a whole-path regex would nest `.*` in `.*` (`**/**/**/x`) and backtrack exponentially
    on a hostile .gitignore. A match costs at most (path length) x (pattern length)."""

    def __init__(self, pattern: str, *, anchored: bool) -> None:
        tokens: list[re.Pattern[str] | None] = [] if anchored else [None]  # None: a `**` segment
        for part in pattern.split("/"):
            if part == "**":
                if not tokens or tokens[-1] is not None:
                    tokens.append(None)
            elif part:
                tokens.append(re.compile(_segment_regex(part)))
        if len(tokens) > 1 and tokens[-1] is None:  # a trailing `/**` matches inside, not the dir
            tokens[-1:] = [_ANY_SEGMENT, None]
        self.tokens = tokens

    def matches(self, rel: str) -> bool:
        """Whether the relative posix path `rel` matches the whole pattern."""
        end = len(self.tokens)
        states = self._closure({0})
        for segment in rel.split("/"):
            following: set[int] = set()
            for state in states:
                if state == end:
                    continue  # the whole pattern is used up, and the path goes on
                token = self.tokens[state]
                if token is None:
                    following.add(state)  # `**` takes this segment and may take more
                elif token.fullmatch(segment):
                    following.add(state + 1)
            if not following:
                return False
            states = self._closure(following)
        return end in states

    def _closure(self, states: set[int]) -> set[int]:
        """`states` plus, for each `**`, the state after it (it may take no segment)."""
        skipped = {state + 1 for state in states if state < len(self.tokens) and self.tokens[state] is None}
        return states | skipped


_ANY_SEGMENT = re.compile(".*", re.DOTALL)


def _segment_regex(part: str) -> str:
    """One segment's glob as a regex. `fnmatch.translate` makes each `*` but the last an atomic lazy
    group, so nothing is ever retried. Before it, git's `\\x` escape becomes a class where `x` is
    special to fnmatch, and a `[^...]` class fnmatch's `[!...]`."""
    part = re.sub(r"(?<!\\)\[\^", "[!", part)
    part = re.sub(r"\\(.)", lambda match: f"[{match[1]}]" if match[1] in "*?[\\" else match[1], part)
    return fnmatch.translate(part)


@dataclass(frozen=True)
class Rule:
    base: str  # the directory of the .gitignore, relative to the root ("" for the root)
    glob: Glob
    negate: bool
    dir_only: bool

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        # the walk tests only paths under the directory of the rule's .gitignore
        return self.glob.matches(rel[len(self.base) + 1 :] if self.base else rel)


def parse_gitignore(text: str, base: str = "") -> list[Rule]:
    rules: list[Rule] = []
    for line in text.splitlines():  # CRLF and lone CR end lines too
        if not line.strip() or line.startswith("#"):
            continue
        line = _TRAILING_SPACES.sub("", line)
        negate = line.startswith("!")
        if negate or line.startswith(("\\!", "\\#")):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        rules.append(Rule(base, Glob(line.lstrip("/"), anchored="/" in line), negate, dir_only))
    return rules


_TRAILING_SPACES = re.compile(r"(?<!\\) +$")  # unless escaped by a backslash


def is_ignored(rules: list[Rule], rel: str, is_dir: bool) -> bool:
    return next((not rule.negate for rule in reversed(rules) if rule.matches(rel, is_dir)), False)
