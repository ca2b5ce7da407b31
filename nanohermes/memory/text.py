"""Text rules of SPEC §3.4–§3.5: tokenizer, normalize, duplicate test, negation guard, cutting."""

from __future__ import annotations

import re

from nanohermes.memory.constants import DUPLICATE_MIN_WEIGHT, MAX_TEXT

# Han (with extensions and compatibility ideographs), the iteration marks 々〆〇, Hiragana, Katakana
# (halfwidth too) and Hangul. CJK punctuation (U+3000–U+303F apart from those marks) is not included.
_CJK_RANGES = (
    "\u1100-\u11ff\u3005-\u3007\u3041-\u30fa\u30fc-\u30ff\u3131-\u318e\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff"
    "\uff66-\uff9f\uffa0-\uffdc\U00020000-\U0003134f"
)
_CJK_CHAR = re.compile(f"[{_CJK_RANGES}]")
# One match per run: group 1 a CJK run, group 2 a run of other letters/digits (`_` separates).
_RUNS = re.compile(f"([{_CJK_RANGES}]+)|([^\\W_{_CJK_RANGES}]+)")
_ASCII_WORDS = re.compile(r"[A-Za-z0-9]{2,}")  # `_RUNS`' words of ≥ 2 characters, on ASCII text
_PAIRS = re.compile(r"(?=(..))", re.DOTALL)  # every overlapping pair of characters

_PUNCTUATION = "，。！？；：、,.!?;:()（）「」\"'“”【】…—-·*#`>~"
_DROP = re.compile(f"[\\s{re.escape(_PUNCTUATION)}]+")

_NEGATION_ZH = ("不", "别", "没", "勿", "禁止")
_NEGATION_EN = re.compile(r"\b(?:not|no|never|don't|dont|avoid|without|\w+n't)\b", re.IGNORECASE)

_SENTENCE_END = re.compile(r"[。！？；!?;]|\.(?=\s)|\n")
_CLAUSE_END = re.compile(r"[，、：,:]|\s[-—–]\s")


def tokenize(text: str) -> list[str]:
    """Lowercase words of ≥ 2 characters, and CJK runs as overlapping bigrams (a lone character stays)."""
    if text.isascii():  # no CJK possible: one plain pattern, much faster than the Unicode classes
        return [word.lower() for word in _ASCII_WORDS.findall(text)]
    tokens: list[str] = []
    for cjk, word in _RUNS.findall(text):
        if word:
            if len(word) >= 2:
                tokens.append(word.lower())
        elif len(cjk) == 1:
            tokens.append(cjk)
        else:
            tokens.extend(_PAIRS.findall(cjk))
    return tokens


def is_cjk(char: str) -> bool:
    return _CJK_CHAR.match(char) is not None


def normalize(text: str) -> str:
    """Lowercase, without whitespace and the punctuation set of SPEC §3.4: the duplicate key."""
    return _DROP.sub("", text.lower())


def weight(key: str) -> int:
    """A CJK character weighs 4 (about the information of a short English word), anything else 1."""
    cjk = len(_CJK_CHAR.findall(key))
    return len(key) + 3 * cjk


def has_negation(text: str) -> bool:
    if any(marker in text for marker in _NEGATION_ZH):
        return True
    return _NEGATION_EN.search(text.replace("’", "'")) is not None


def is_duplicate(
    new_text: str, old_text: str, new_key: str | None = None, old_key: str | None = None
) -> bool:
    """Equal keys, or one contains the other and the shorter weighs ≥ 12 — unless exactly one negates."""
    new_key = normalize(new_text) if new_key is None else new_key
    old_key = normalize(old_text) if old_key is None else old_key
    if new_key != old_key:
        shorter, longer = (new_key, old_key) if len(new_key) <= len(old_key) else (old_key, new_key)
        if not shorter or shorter not in longer or weight(shorter) < DUPLICATE_MIN_WEIGHT:
            return False
    return has_negation(new_text) == has_negation(old_text)


def cut_text(text: str, limit: int = MAX_TEXT) -> str:
    """At most `limit` characters: cut at the last sentence, else clause, else word boundary.

    A boundary in the first half of the text is ignored (it would lose too much); ASCII words are
    never split unless one word alone is longer than the limit.
    """
    if len(text) <= limit:
        return text
    head = text[: limit + 1]
    floor = limit // 2
    for pattern in (_SENTENCE_END, _CLAUSE_END):
        ends = [m.end() for m in pattern.finditer(head) if floor <= m.end() <= limit]
        if ends:
            return text[: ends[-1]].rstrip()
    cut = _word_boundary(text, limit - 1, floor)
    return text[:cut].rstrip() + "…"


def _word_boundary(text: str, limit: int, floor: int) -> int:
    """The largest cut ≤ limit that does not split an ASCII word (CJK may be cut anywhere)."""
    for cut in range(limit, floor - 1, -1):
        before, after = text[cut - 1], text[cut]
        if not (_is_ascii_word(before) and _is_ascii_word(after)):
            return cut
    return limit


def _is_ascii_word(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")
