"""Settings: defaults < config TOML < environment < command-line flags.

The one place that reads the environment. `load_settings` is called once, by `nanohermes.cli`, and the
resulting `Settings` object is passed down; nothing else looks at `os.environ`.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from nanohermes.errors import ConfigError
from nanohermes.mcp_config import (
    McpServerConfig,
    check_server_names,
    describe_problem,
    read_mcp_json,
    toml_line,
)

ENV_PREFIX = "NANOHERMES_"
ENV_FALLBACKS = {"api_key": "OPENAI_API_KEY", "base_url": "OPENAI_BASE_URL"}
PermissionMode = Literal["read-only", "ask", "auto"]
PERMISSION_MODES: tuple[str, ...] = get_args(PermissionMode)
SandboxMode = Literal["auto", "bwrap", "off"]


class Settings(BaseModel):
    """Every setting of SPEC §2. Build it with `load_settings`, not directly.

    A plain pydantic model: the layers are merged here (`load_settings`), so pydantic-settings'
    source machinery (and its ~half of the start-up import time) is not needed."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    model: str | None = None
    base_url: str = "https://api.openai.com/v1"
    api_key: SecretStr | None = None
    request_timeout: float = Field(120.0, gt=0)
    max_retries: int = Field(3, ge=0, le=20)
    max_iterations: int = Field(50, ge=1)
    permission: PermissionMode = "ask"
    memory: bool = True
    memory_dir: Path = Path("~/.nanohermes")
    memory_max_entries: int = Field(500, ge=1, le=1_000_000)
    distill_model: str | None = None
    compact_threshold_chars: int = Field(120_000, ge=1_000)
    compact_keep_messages: int = Field(10, ge=1)
    sessions_dir: Path = Path("~/.nanohermes/sessions")
    state_dir: Path = Path("~/.nanohermes")
    shell_timeout: float = Field(120.0, gt=0)
    tool_output_chars: int = Field(20_000, ge=200)
    language: Literal["en", "zh"] = "en"
    send_reasoning: bool = False
    max_output_tokens: int | None = Field(None, ge=1)
    checkpoints: bool = True
    sandbox: SandboxMode = "auto"
    sandbox_network: bool = False
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)

    @field_validator("mcp_servers")
    @classmethod
    def _check_mcp_names(cls, value: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        problem = check_server_names(list(value))
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

    @field_validator("model", "distill_model")
    @classmethod
    def _blank_is_unset(cls, value: str | None) -> str | None:
        return value.strip() or None if isinstance(value, str) else value

    @property
    def memory_file(self) -> Path:
        return self.memory_dir / "memory.json"

    @property
    def history_file(self) -> Path:
        return self.state_dir / "history"

    @property
    def agents_dir(self) -> Path:
        return self.state_dir / "agents"

    def api_key_value(self) -> str | None:
        return self.api_key.get_secret_value() if self.api_key else None

    def with_changes(self, **changes: Any) -> Settings:
        """A copy with some settings changed and validated (e.g. /model, /permission)."""
        data = {name: getattr(self, name) for name in type(self).model_fields}
        data.update(changes)
        try:
            return Settings(**data)
        except ValidationError as err:
            raise ConfigError(_first_problem(err, "")) from None


SETTING_NAMES: tuple[str, ...] = tuple(Settings.model_fields)


def home_dir(environ: Mapping[str, str]) -> Path:
    home = environ.get("HOME") or environ.get("USERPROFILE")
    return Path(home) if home else Path.home()


def default_config_path(environ: Mapping[str, str]) -> Path:
    return home_dir(environ) / ".nanohermes" / "config.toml"


def load_settings(
    cli: Mapping[str, Any] | None = None,
    *,
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    mcp_config: Sequence[Path] = (),
) -> Settings:
    """Build Settings from all layers. Raises ConfigError with one line naming the culprit and fix.

    `cli` holds only the flags the user gave (None values are ignored). `config_file` is `--config`;
    without it `~/.nanohermes/config.toml` is read when it exists. `mcp_config`: `--mcp-config` JSON
    files, whose servers join the config file's (a JSON server replaces a TOML one of the same name).
    """
    environ = os.environ if environ is None else environ
    home = home_dir(environ)
    cli_values = {k: v for k, v in (cli or {}).items() if v is not None}
    explicit = config_file is not None
    path = config_file if config_file is not None else default_config_path(environ)
    file_values = _read_config(path, required=explicit)
    env_values = _env_values(environ)
    fallback_values = {name: environ[var] for name, var in ENV_FALLBACKS.items() if environ.get(var)}
    defaults = _defaults(home, environ)
    layers: list[tuple[str, dict[str, Any]]] = [
        ("cli", cli_values),
        ("env", env_values),
        ("fallback", fallback_values),
        ("file", file_values),
        ("default", defaults),
    ]

    merged: dict[str, Any] = {}
    for _, values in reversed(layers):
        _deep_update(merged, values)
    try:
        loaded = Settings(**merged)
    except ValidationError as err:
        raise ConfigError(_describe_error(err, layers, path)) from None
    data = _expand_paths(loaded, home)
    for json_path in mcp_config:
        data["mcp_servers"] = {**data["mcp_servers"], **read_mcp_json(json_path)}
    data["mcp_servers"] = {name: _expand_cwd(server, home) for name, server in data["mcp_servers"].items()}
    try:
        return Settings(**data)
    except ValidationError as err:
        raise ConfigError(_first_problem(err, "--mcp-config")) from None


def _deep_update(target: dict[str, Any], values: Mapping[str, Any]) -> None:
    """Merge `values` over `target`; nested tables (e.g. one MCP server's keys) merge key by key."""
    for key, value in values.items():
        current = target.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            merged = dict(current)
            _deep_update(merged, value)
            target[key] = merged
        else:
            target[key] = value


def _defaults(home: Path, environ: Mapping[str, str]) -> dict[str, Any]:
    base = home / ".nanohermes"
    return {
        "memory_dir": base,
        "sessions_dir": base / "sessions",
        "state_dir": base,
        "language": _language_from_locale(environ),
    }


def _language_from_locale(environ: Mapping[str, str]) -> str:
    for var in ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"):
        value = environ.get(var, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def _env_values(environ: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in SETTING_NAMES:
        raw = environ.get(ENV_PREFIX + name.upper())
        if raw is not None and raw != "":
            values[name] = raw
    return values


def _read_config(path: Path, *, required: bool) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise ConfigError(f"config file {path} does not exist", "check the --config path") from None
        return {}
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise ConfigError(f"cannot read config file {path}: {reason}", "fix or remove the file") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"config file {path} is not valid TOML: {err}", "fix that line") from None
    if "nanohermes" in data and isinstance(data["nanohermes"], dict):
        data = data["nanohermes"]
    unknown = [key for key in data if key not in SETTING_NAMES]
    if unknown:
        line = _line_of(text, unknown[0])
        raise ConfigError(f"{path}{line}: unknown setting '{unknown[0]}'", _unknown_hint(unknown[0], path))
    return data


def _unknown_hint(name: str, path: Path) -> str:
    """Fix it in the user's own file: the closest valid name, else every valid name."""
    import difflib

    close = difflib.get_close_matches(name, SETTING_NAMES, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'? fix or remove it in {path}"
    return f"fix or remove it in {path}; valid settings: {', '.join(SETTING_NAMES)}"


def _line_of(text: str, key: str) -> str:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip().startswith(key) and "=" in line:
            return f", line {number}"
    return ""


def _describe_error(err: ValidationError, layers: list[tuple[str, dict[str, Any]]], path: Path) -> str:
    first = err.errors()[0]
    field = str(first["loc"][0]) if first["loc"] else ""
    if field == "mcp_servers" and len(first["loc"]) > 1:
        return _mcp_problem(first, path)
    origin = field
    for layer, values in layers:
        if field in values:
            origin = _origin(layer, field, path)
            break
    return _first_problem(err, origin)


def _origin(layer: str, field: str, path: Path) -> str:
    if layer == "cli":
        return "--" + field.replace("_", "-")
    if layer == "env":
        return ENV_PREFIX + field.upper()
    if layer == "fallback":
        return ENV_FALLBACKS[field]
    if layer == "file":
        try:
            line = _line_of(path.read_text(encoding="utf-8"), field)
        except OSError:
            line = ""
        return f"{field} in {path}{line}"
    return field


def _mcp_problem(error: Any, path: Path) -> str:
    """`<file>, line N: MCP server 'x': …` for a bad `[mcp_servers.x]` table."""
    server = str(error["loc"][1])
    key = str(error["loc"][2]) if len(error["loc"]) > 2 else None
    try:
        line = toml_line(path.read_text(encoding="utf-8"), server, key)
    except OSError:
        line = ""
    nested = {**error, "loc": error["loc"][2:]}
    return f"{path}{line}: {describe_problem(server, nested)}"


def _expand_cwd(server: McpServerConfig, home: Path) -> McpServerConfig:
    if server.cwd is None:
        return server
    return server.model_copy(update={"cwd": _expand_user(server.cwd, home)})


def _first_problem(err: ValidationError, origin: str) -> str:
    first = err.errors()[0]
    field = str(first["loc"][0]) if first["loc"] else "setting"
    where = origin or field
    value = first.get("input")
    shown = "" if field == "api_key" or isinstance(value, dict) else f" {value!r}"
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"invalid value{shown} for {where}: {message}"


def _expand_paths(settings: Settings, home: Path) -> dict[str, Any]:
    data = {name: getattr(settings, name) for name in SETTING_NAMES}
    for name in ("memory_dir", "sessions_dir", "state_dir"):
        data[name] = _expand_user(Path(data[name]), home)
    return data


def _expand_user(path: Path, home: Path) -> Path:
    text = str(path)
    if text == "~" or text.startswith("~/"):
        return home / text[2:] if len(text) > 1 else home
    return path
