"""Reading the TOML config file (SPEC §2): `--config FILE` or `~/.nanohermes/config.toml`. Stdlib only.

Every problem is a ConfigError naming the file and, where there is one, the line: a file that cannot
be read, is not UTF-8 or not TOML, or names a setting that does not exist (a typo is never ignored).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nanohermes.core.errors import ConfigError
from nanohermes.core.fileio import read_small_text

CONFIG_MAX_BYTES = 1_000_000
"""A config file is a few hundred bytes; past this it is not one (and would be read whole)."""
TABLE = "nanohermes"
"""The settings may sit under a `[nanohermes]` table, beside or instead of the top level."""


@dataclass(frozen=True)
class ConfigFile:
    """The settings a config file gives, and its text (to find the line a bad value is on)."""

    path: Path
    values: dict[str, Any] = field(default_factory=dict)
    text: str = ""

    def line_of(self, key: str) -> str:
        """`, line N` of the first `key = …` line (or `[key…]` table header), or ""."""
        quoted = re.escape(key)
        assignment = re.compile(rf"""^\s*(?:{quoted}|"{quoted}"|'{quoted}')\s*=""")
        header = re.compile(rf"""^\s*\[\s*(?:{TABLE}\s*\.\s*)?(?:{quoted}|"{quoted}"|'{quoted}')\s*[\].]""")
        for number, line in enumerate(self.text.splitlines(), start=1):
            if assignment.match(line) or header.match(line):
                return f", line {number}"
        return ""


def read_config(path: Path, names: Sequence[str], *, required: bool) -> ConfigFile:
    """The settings in `path`, checked against `names`. A missing file is `required`'s error, else
    no settings (a link to a missing file is an error either way: the settings meant are not read)."""
    try:
        text = read_small_text(path, CONFIG_MAX_BYTES).removeprefix("\ufeff")  # Notepad's BOM
    except FileNotFoundError:
        if path.is_symlink():
            raise ConfigError(
                f"config file {path} links to a file that does not exist", "fix or remove the link"
            ) from None
        if required:
            raise ConfigError(f"config file {path} does not exist", "check the --config path") from None
        return ConfigFile(path)
    except UnicodeDecodeError as err:
        line = err.object[: err.start].count(b"\n") + 1
        byte = err.object[err.start]
        raise ConfigError(
            f"config file {path} is not UTF-8 text (line {line}: byte 0x{byte:02x})", "save it as UTF-8"
        ) from None
    except OSError as err:
        reason = err.strerror or str(err)
        raise ConfigError(f"cannot read config file {path}: {reason}", "fix or remove the file") from None
    config = ConfigFile(path, {}, text)
    return ConfigFile(path, _settings(config, _parsed(config), names), text)


def _parsed(config: ConfigFile) -> dict[str, Any]:
    try:
        return tomllib.loads(config.text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"config file {config.path} is not valid TOML: {err}", "fix that line") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise ConfigError(f"config file {config.path} is not valid TOML: nested too deeply", "") from None
    except ValueError:  # int() of a number over 4,300 digits (TOMLDecodeError, a ValueError, is above)
        raise ConfigError(
            f"config file {config.path} holds a number too long to read", "fix that value"
        ) from None


def _settings(config: ConfigFile, data: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """The top level and the `[nanohermes]` table together: neither is silently dropped for the other."""
    table = data.get(TABLE)
    if isinstance(table, dict):
        data = {key: value for key, value in data.items() if key != TABLE}
        twice = [key for key in table if key in data]
        if twice:
            raise ConfigError(
                f"{config.path}{config.line_of(twice[0])}: '{twice[0]}' is set both in [{TABLE}] "
                "and outside it",
                "keep one of them",
            )
        data |= table
    unknown = [key for key in data if key not in names]
    if unknown:
        where = f"{config.path}{config.line_of(unknown[0])}"
        raise ConfigError(
            f"{where}: unknown setting '{unknown[0]}'", _unknown_hint(unknown[0], names, config.path)
        )
    return data


def _unknown_hint(name: str, names: Sequence[str], path: Path) -> str:
    """Fix it in the user's own file: the closest valid name, else every valid name."""
    import difflib

    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'? fix or remove it in {path}"
    return f"fix or remove it in {path}; valid settings: {', '.join(names)}"
