"""Settings: defaults < config TOML < environment < command-line flags.

The one place that reads the environment. `load_settings` is called once, by `nanohermes.app.cli`, and the
resulting `Settings` object is passed down; nothing else looks at `os.environ`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from nanohermes.config import setting_values as read
from nanohermes.config.config_file import ConfigFile, read_config
from nanohermes.config.setting_values import BadValue, Secret
from nanohermes.core.errors import ConfigError

if TYPE_CHECKING:
    from nanohermes.config.mcp_config import McpServerConfig

ENV_PREFIX = "NANOHERMES_"
ENV_FALLBACKS = {"api_key": "OPENAI_API_KEY", "base_url": "OPENAI_BASE_URL"}
PermissionMode = Literal["read-only", "ask", "auto"]
PERMISSION_MODES: tuple[str, ...] = get_args(PermissionMode)
SandboxMode = Literal["auto", "bwrap", "off"]
REQUEST_TIMEOUT_MAX = 86_400
"""A day: longer waits overflow the clock arithmetic below the HTTP library (an OverflowError)."""


class InvalidSetting(ValueError):
    """A setting whose value cannot be used: `field`, the value as given, why (and, for one MCP
    server's table, the server's name and pydantic's error about it)."""

    def __init__(self, field: str, value: Any, reason: str, mcp: tuple[str, dict[str, Any]] | None = None):
        super().__init__(f"{field}: {reason}")
        self.field, self.value, self.reason, self.mcp = field, value, reason, mcp


@dataclass(frozen=True)
class Settings:
    """Every setting of SPEC §2. Build it with `load_settings`, not directly: every value is read and
    checked on construction (`InvalidSetting`), but only `load_settings` says where a bad one came from.

    A plain frozen dataclass checked by `nanohermes.config.setting_values`: no validation library on the path
    to the first answer (importing pydantic and building the model were 31 % of `nanohermes -p`'s work;
    README, Performance). pydantic is imported only to check `[mcp_servers.*]` tables, when there are."""

    model: str | None = None
    base_url: str = "https://api.openai.com/v1"
    api_key: Secret | None = None
    request_timeout: float = 120.0
    max_retries: int = 3
    max_iterations: int = 50
    permission: PermissionMode = "ask"
    memory: bool = True
    memory_dir: Path = Path("~/.nanohermes")
    memory_max_entries: int = 500
    distill_model: str | None = None
    compact_threshold_chars: int = 120_000
    compact_keep_messages: int = 10
    sessions_dir: Path = Path("~/.nanohermes/sessions")
    state_dir: Path = Path("~/.nanohermes")
    shell_timeout: float = 120.0
    tool_output_chars: int = 20_000
    language: Literal["en", "zh"] = "en"
    send_reasoning: bool = False
    max_output_tokens: int | None = None
    checkpoints: bool = True
    sandbox: SandboxMode = "auto"
    sandbox_network: bool = False
    mcp_servers: Mapping[str, McpServerConfig] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, reader in _READERS.items():
            value = getattr(self, name)
            try:
                checked = reader(value)
            except BadValue as err:
                shown = value if err.shown is None else err.shown
                raise InvalidSetting(name, shown, err.reason) from None
            object.__setattr__(self, name, checked)

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
        """A copy with some settings changed and checked (e.g. /model, /permission)."""
        try:
            return dataclasses.replace(self, **changes)
        except InvalidSetting as err:
            raise ConfigError(_problem(err, "")) from None


def _mcp_servers(value: Any) -> dict[str, McpServerConfig]:
    """`[mcp_servers.NAME]` tables → checked server configs (pydantic, imported only when there are)."""
    if not isinstance(value, Mapping):
        raise BadValue("must be a table of MCP servers ([mcp_servers.NAME] in the config file)")
    if not value:
        return {}
    from pydantic import ValidationError

    from nanohermes.config.mcp_config import McpServerConfig, check_server_names

    problem = check_server_names(list(value))
    if problem:
        raise BadValue(problem)
    servers: dict[str, McpServerConfig] = {}
    for name, server in value.items():
        if isinstance(server, McpServerConfig):
            servers[name] = server
            continue
        try:
            servers[name] = McpServerConfig.model_validate(server)
        except ValidationError as err:
            detail = dict(err.errors(include_url=False)[0])
            raise InvalidSetting("mcp_servers", value, str(detail.get("msg")), (str(name), detail)) from None
    return servers


_READERS: dict[str, read.Reader] = {
    "model": read.optional_name,
    "base_url": read.base_url,
    "api_key": read.secret,
    "request_timeout": read.seconds(REQUEST_TIMEOUT_MAX),
    "max_retries": read.whole(0, 20),
    "max_iterations": read.whole(1),
    "permission": read.one_of(*PERMISSION_MODES),
    "memory": read.boolean,
    "memory_dir": read.path,
    "memory_max_entries": read.whole(1, 1_000_000),
    "distill_model": read.optional_name,
    "compact_threshold_chars": read.whole(1_000),
    "compact_keep_messages": read.whole(1),
    "sessions_dir": read.path,
    "state_dir": read.path,
    "shell_timeout": read.seconds(),
    "tool_output_chars": read.whole(200),
    "language": read.one_of("en", "zh"),
    "send_reasoning": read.boolean,
    "max_output_tokens": read.optional_whole(1),
    "checkpoints": read.boolean,
    "sandbox": read.one_of(*get_args(SandboxMode)),
    "sandbox_network": read.boolean,
    "mcp_servers": _mcp_servers,
}


SETTING_NAMES: tuple[str, ...] = tuple(field.name for field in dataclasses.fields(Settings))


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
    config = read_config(path, SETTING_NAMES, required=explicit)
    env_values = _env_values(environ)
    fallback_values = {name: environ[var] for name, var in ENV_FALLBACKS.items() if environ.get(var)}
    defaults = _defaults(home, environ)
    layers: list[tuple[str, dict[str, Any]]] = [
        ("cli", cli_values),
        ("env", env_values),
        ("fallback", fallback_values),
        ("file", config.values),
        ("default", defaults),
    ]

    merged: dict[str, Any] = {}
    for _, values in reversed(layers):
        _deep_update(merged, values)
    try:
        loaded = Settings(**merged)
    except InvalidSetting as err:
        raise ConfigError(_describe_error(err, layers, config)) from None
    changes = _expanded_paths(loaded, home)
    servers = dict(loaded.mcp_servers)
    if mcp_config:
        from nanohermes.config.mcp_config import read_mcp_json

        for json_path in mcp_config:
            servers.update(read_mcp_json(json_path))
    changes["mcp_servers"] = {name: _expand_cwd(server, home) for name, server in servers.items()}
    try:
        return dataclasses.replace(loaded, **changes)
    except InvalidSetting as err:
        raise ConfigError(_problem(err, "--mcp-config")) from None


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


def _describe_error(err: InvalidSetting, layers: list[tuple[str, dict[str, Any]]], config: ConfigFile) -> str:
    if err.mcp is not None:
        return _mcp_problem(err.mcp, config)
    origin = err.field
    for layer, values in layers:
        if err.field in values:
            origin = _origin(layer, err.field, config)
            break
    return _problem(err, origin)


def _origin(layer: str, field: str, config: ConfigFile) -> str:
    if layer == "cli":
        return "--" + field.replace("_", "-")
    if layer == "env":
        return ENV_PREFIX + field.upper()
    if layer == "fallback":
        return ENV_FALLBACKS[field]
    if layer == "file":
        return f"{field} in {config.path}{config.line_of(field)}"
    return field


def _mcp_problem(mcp: tuple[str, dict[str, Any]], config: ConfigFile) -> str:
    """`<file>, line N: MCP server 'x': …` for a bad `[mcp_servers.x]` table."""
    from nanohermes.config.mcp_config import describe_problem, toml_line

    server, error = mcp
    key = str(error["loc"][0]) if error.get("loc") else None
    return f"{config.path}{toml_line(config.text, server, key)}: {describe_problem(server, error)}"


def _expand_cwd(server: McpServerConfig, home: Path) -> McpServerConfig:
    if server.cwd is None:
        return server
    return server.model_copy(update={"cwd": _expand_user(server.cwd, home)})


def _problem(err: InvalidSetting, origin: str) -> str:
    """`invalid value 'x' for ORIGIN: reason` (never the API key, never a whole table)."""
    if err.mcp is not None:
        from nanohermes.config.mcp_config import describe_problem

        return f"{origin or 'mcp_servers'}: {describe_problem(*err.mcp)}"
    shown = "" if err.field == "api_key" else read.shown(err.value)
    return f"invalid value{shown and ' ' + shown} for {origin or err.field}: {err.reason}"


def _expanded_paths(settings: Settings, home: Path) -> dict[str, Any]:
    return {
        name: _expand_user(Path(getattr(settings, name)), home)
        for name in ("memory_dir", "sessions_dir", "state_dir")
    }


def _expand_user(path: Path, home: Path) -> Path:
    text = str(path)
    if text == "~" or text.startswith("~/"):
        return home / text[2:] if len(text) > 1 else home
    return path
