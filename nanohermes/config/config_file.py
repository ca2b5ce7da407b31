"""The TOML config file (SPEC §2), `--config FILE` or `~/.nanohermes/config.toml`: a pydantic-settings source.
Every problem is a ConfigError naming the file and line; an unknown setting (a typo) is never ignored."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic_settings import BaseSettings, TomlConfigSettingsSource

from nanohermes.core.errors import ConfigError
from nanohermes.core.fileio import read_small_text

CONFIG_MAX_BYTES = 1_000_000
"""A config file is a few kilobytes; past this it is not one (and would be read whole)."""
TABLE = "nanohermes"
"""The settings may sit under a `[nanohermes]` table, beside or instead of the top level."""
_KEY = r"""(?:"[^"\n]*"|'[^'\n]*'|[A-Za-z0-9_-]+)"""
_DOTTED = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_HEADER = re.compile(rf"^\s*\[\[?\s*({_DOTTED})\s*\]")
_ASSIGNMENT = re.compile(rf"^\s*({_DOTTED})\s*=")
_PART = re.compile(r""""([^"]*)"|'([^']*)'|([A-Za-z0-9_-]+)""")


def read_text(path: Path, what: str, flag: str, *, required: bool = True) -> str:
    """The file's text; "" when it is missing and not `required` (a link to nothing is an error)."""
    try:
        return read_small_text(path, CONFIG_MAX_BYTES).removeprefix("\ufeff")  # Notepad's BOM
    except FileNotFoundError:
        if path.is_symlink():
            raise ConfigError(
                f"{what} {path} links to a file that does not exist", "fix or remove the link"
            ) from None
        if required:
            raise ConfigError(f"{what} {path} does not exist", f"check the {flag} path") from None
        return ""
    except UnicodeDecodeError as err:
        line = err.object[: err.start].count(b"\n") + 1
        raise ConfigError(
            f"{what} {path} is not UTF-8 text (line {line}: byte 0x{err.object[err.start]:02x})",
            "save it as UTF-8",
        ) from None
    except OSError as err:
        reason = err.strerror or str(err)
        raise ConfigError(f"cannot read {what} {path}: {reason}", "fix or remove the file") from None


class ConfigFile(TomlConfigSettingsSource):
    """The settings in `path` (none if it is missing and not `required`), and its text for `line_of`."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path, *, required: bool) -> None:
        self.path, self.required, self.text = path, required, ""
        self.names = list(settings_cls.model_fields)  # read before the base class sets settings_cls
        super().__init__(settings_cls, toml_file=path)

    def _read_files(self, files: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Read here, not skipped as pydantic-settings skips them: a missing `--config`, a link to
        nowhere, a FIFO (that would hang) are errors."""
        self.text = read_text(self.path, "config file", "--config", required=self.required)
        try:
            data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as err:
            raise ConfigError(f"config file {self.path} is not valid TOML: {err}", "fix that line") from None
        except RecursionError:  # tomllib recurses per nested array or inline table
            raise ConfigError(f"config file {self.path} is not valid TOML: nested too deeply") from None
        except ValueError:  # int() of a number over 4,300 digits (TOMLDecodeError, a ValueError, is above)
            raise ConfigError(
                f"config file {self.path} holds a number too long to read", "fix that value"
            ) from None
        return self._settings(data)

    def _settings(self, data: dict[str, Any]) -> dict[str, Any]:
        """The top level and the `[nanohermes]` table together: neither is silently dropped for the other."""
        table = data.pop(TABLE, None)
        if isinstance(table, dict):
            twice = [key for key in table if key in data]
            if twice:
                raise ConfigError(
                    f"{self.path}{self.line_of(twice[0])}: '{twice[0]}' is set both in [{TABLE}] "
                    "and outside it",
                    "keep one of them",
                )
            data |= table
        elif table is not None:
            data[TABLE] = table  # `nanohermes = 1`: an unknown setting like any other
        unknown = [key for key in data if key not in self.names]
        if unknown:
            where = f"{self.path}{self.line_of(unknown[0])}"
            raise ConfigError(f"{where}: unknown setting '{unknown[0]}'", self._hint(unknown[0]))
        return data

    def _hint(self, name: str) -> str:
        """Fix it in the user's own file: the closest valid name, else every valid name."""
        import difflib

        close = difflib.get_close_matches(name, self.names, n=1, cutoff=0.6)
        if close:
            return f"did you mean '{close[0]}'? fix or remove it in {self.path}"
        return f"fix or remove it in {self.path}; valid settings: {', '.join(self.names)}"

    def line_of(self, *keys: str) -> str:
        """`, line N` of the setting `keys` (or of the table holding it), "" when none sets it."""
        best, found = 0, ""
        table: tuple[str, ...] = ()
        for number, line in enumerate(self.text.splitlines(), start=1):
            header = _HEADER.match(line)
            if header:
                table = _parts(header.group(1))
                table = table[1:] if table[:1] == (TABLE,) else table
                path = table
            else:
                assignment = _ASSIGNMENT.match(line)
                path = (*table, *_parts(assignment.group(1))) if assignment else ()
            shared = len(path) if keys[: len(path)] == path else 0
            if shared > best:
                best, found = shared, f", line {number}"
                if shared == len(keys):
                    break
        return found


def _parts(dotted: str) -> tuple[str, ...]:
    """`a."b.c".d` → ("a", "b.c", "d")."""
    return tuple(a or b or c for a, b, c in _PART.findall(dotted))
