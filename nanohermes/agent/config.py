"""What the agent loop is configured with (from Settings)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nanohermes.config.settings import Settings


@dataclass(frozen=True)
class AgentConfig:
    model: str
    distill_model: str | None = None  # None: the current chat model (follows /model)
    max_iterations: int = 50
    compact_threshold_chars: int = 120_000
    compact_keep_messages: int = 10
    language: str = "en"
    verbose: bool = False
    save_each_turn: bool = True  # False in one-shot mode: saved once, after the distillation

    @classmethod
    def from_settings(
        cls, settings: Settings, *, verbose: bool = False, save_each_turn: bool = True
    ) -> AgentConfig:
        return cls(
            model=settings.model or "",
            distill_model=settings.distill_model,
            max_iterations=settings.max_iterations,
            compact_threshold_chars=settings.compact_threshold_chars,
            compact_keep_messages=settings.compact_keep_messages,
            language=settings.language,
            verbose=verbose,
            save_each_turn=save_each_turn,
        )
