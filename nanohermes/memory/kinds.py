"""The four memory kinds (SPEC §3.3): meaning, labels in both languages, eviction rank, aliases."""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    """What a memory is. The value is what memory.json stores."""

    PREFERENCE = "preference"
    CORRECTION = "correction"
    LESSON = "lesson"
    FACT = "fact"

    @classmethod
    def parse(cls, value: object) -> Kind | None:
        """The kind named by `value` (a kind or an alias, any case), or None."""
        if isinstance(value, Kind):
            return value
        if not isinstance(value, str):
            return None
        return _ALIASES.get(value.strip().lower())

    def label(self, lang: str = "en") -> str:
        """The label shown in the memory block: `Preference` / `偏好`."""
        return _LABELS[self][1 if lang == "zh" else 0]

    @property
    def eviction_rank(self) -> int:
        """0 is evicted last (preference), 3 first (fact)."""
        return _RANKS[self]


KIND_NAMES: tuple[str, ...] = tuple(kind.value for kind in Kind)

_LABELS: dict[Kind, tuple[str, str]] = {
    Kind.PREFERENCE: ("Preference", "偏好"),
    Kind.CORRECTION: ("Correction", "纠正"),
    Kind.LESSON: ("Lesson", "经验"),
    Kind.FACT: ("Fact", "事实"),
}
_RANKS: dict[Kind, int] = {Kind.PREFERENCE: 0, Kind.CORRECTION: 1, Kind.LESSON: 2, Kind.FACT: 3}
_ALIASES: dict[str, Kind] = {
    **{kind.value: kind for kind in Kind},
    "lesson-learned": Kind.LESSON,
    "lesson_learned": Kind.LESSON,
    "experience": Kind.LESSON,
    "pref": Kind.PREFERENCE,
    "feedback": Kind.CORRECTION,
    "project": Kind.FACT,
}


def unknown_kind_message(value: object) -> str:
    """One line naming the four kinds, for a kind that does not parse."""
    return f"unknown memory kind {str(value)!r}; use one of: {', '.join(KIND_NAMES)}"
