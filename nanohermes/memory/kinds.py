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
        return _ALIASES.get(value.strip().lower()) if isinstance(value, str) else None

    def label(self, lang: str = "en") -> str:
        """The label shown in the memory block: `Preference` / `偏好`."""
        return _LABELS[self][1 if lang == "zh" else 0]

    @property
    def eviction_rank(self) -> int:
        """0 is evicted last (preference), 3 first (fact): the order of the kinds."""
        return _RANKS[self]


_RANKS = {kind: rank for rank, kind in enumerate(Kind)}
_LABELS = {Kind.PREFERENCE: ("Preference", "偏好"), Kind.CORRECTION: ("Correction", "纠正")}
_LABELS |= {Kind.LESSON: ("Lesson", "经验"), Kind.FACT: ("Fact", "事实")}
_ALIASES = {kind.value: kind for kind in Kind} | {"pref": Kind.PREFERENCE, "feedback": Kind.CORRECTION}
_ALIASES |= {"lesson-learned": Kind.LESSON, "lesson_learned": Kind.LESSON, "experience": Kind.LESSON}
_ALIASES |= {"project": Kind.FACT}
