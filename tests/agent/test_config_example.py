"""config/nanohermes.toml documents every setting and loads as it stands."""

from __future__ import annotations

import re
from pathlib import Path

from nanohermes.config.settings import SETTING_NAMES, load_settings

EXAMPLE = Path(__file__).resolve().parents[2] / "config" / "nanohermes.toml"


def test_every_setting_is_documented_in_the_example() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    named = set(re.findall(r"^#? ?([a-z_]+) = ", text, flags=re.MULTILINE))
    assert named == set(SETTING_NAMES)


def test_the_example_loads(tmp_path: Path) -> None:
    settings = load_settings({}, config_file=EXAMPLE, environ={"HOME": str(tmp_path)})
    assert settings.model == "gpt-4o-mini"
    assert settings.memory_dir == tmp_path / ".nanohermes"
    assert settings.sessions_dir == tmp_path / ".nanohermes" / "sessions"
    assert settings.permission == "ask"
    assert settings.api_key is None
