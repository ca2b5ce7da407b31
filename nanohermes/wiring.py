"""Composition root for chat: builds the model client, memory store, tools and agent, then runs the
REPL or one-shot mode. Part of the `cli` layer: it may import every other layer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nanohermes.errors import ConfigError

if TYPE_CHECKING:
    from nanohermes.cli import CliOptions
    from nanohermes.settings import Settings


def run_chat(options: CliOptions, settings: Settings) -> int:
    raise ConfigError("chat is not built yet in this version", "use 'nanohermes memory …' for now")
