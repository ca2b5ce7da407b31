"""Settings (SPEC §2): one pydantic-settings model. Flags > environment > config file > defaults.
`load_settings` is called once, by `app.cli`; nothing else reads `os.environ`. A bad value is one line
naming where it came from: the flag, the variable, or the file and line."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, ValidationError, model_validator
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from nanohermes.config.config_file import ConfigFile
from nanohermes.config.hooks_config import Hooks
from nanohermes.config.mcp_config import check_server_names, describe_problem, read_mcp_json
from nanohermes.config.setting_values import (
    ApiKey,
    BaseUrl,
    Folder,
    McpServers,
    Name,
    Seconds,
    Whole,
    reason,
    shown,
)
from nanohermes.core.errors import ConfigError

ENV_PREFIX = "NANOHERMES_"
ENV_FALLBACKS = {"api_key": "OPENAI_API_KEY", "base_url": "OPENAI_BASE_URL"}
PermissionMode = Literal["read-only", "ask", "auto"]
PERMISSION_MODES: tuple[str, ...] = get_args(PermissionMode)
REQUEST_TIMEOUT_MAX = 86_400
"""A day: longer waits overflow the clock arithmetic below the HTTP library (an OverflowError)."""
FOLDERS = ("memory_dir", "sessions_dir", "state_dir")
"""The settings whose `~` is the user's home (from HOME, else USERPROFILE)."""

_LAYERS: ContextVar[tuple[PydanticBaseSettingsSource, ...]] = ContextVar("settings_layers", default=())
"""The layers below the init values while `load_settings` builds a `Settings` (the config file)."""


class Settings(BaseSettings):
    """Every setting of SPEC §2. Build it with `load_settings`: `Settings(**values)` alone is those
    values over the defaults, checked, without the environment or the config file."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, extra="forbid")

    model: Name = None
    base_url: BaseUrl = "https://api.openai.com/v1"
    api_key: ApiKey = None
    request_timeout: Annotated[Seconds, Field(le=REQUEST_TIMEOUT_MAX)] = 120.0
    max_retries: Annotated[Whole, Field(ge=0, le=20)] = 3
    max_iterations: Annotated[Whole, Field(ge=1)] = 50
    permission: PermissionMode = "ask"
    memory: bool = True
    memory_dir: Folder = Path("~/.nanohermes")
    memory_max_entries: Annotated[Whole, Field(ge=1, le=1_000_000)] = 500
    memory_team_distill: bool = False
    distill_model: Name = None
    compact_threshold_chars: Annotated[Whole, Field(ge=1_000)] = 120_000
    compact_keep_messages: Annotated[Whole, Field(ge=1)] = 10
    sessions_dir: Folder = Path("~/.nanohermes/sessions")
    state_dir: Folder = Path("~/.nanohermes")
    shell_timeout: Seconds = 120.0
    tool_output_chars: Annotated[Whole, Field(ge=200)] = 20_000
    language: Literal["en", "zh"] = "en"
    send_reasoning: bool = False
    max_output_tokens: Annotated[Whole, Field(ge=1)] | None = None
    checkpoints: bool = True
    sandbox: Literal["auto", "bwrap", "off"] = "auto"
    sandbox_network: bool = False
    web_fetch_private: bool = False
    model_vision: bool = False
    mcp_servers: McpServers = Field(default_factory=dict)
    hooks: Hooks = Field(default_factory=Hooks)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The init values (the flags over the variables) over the layers `load_settings` read."""
        return (init_settings, *_LAYERS.get())

    @model_validator(mode="before")
    @classmethod
    def _strip_text(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Text from a flag, a variable or the file is read without the blanks around it."""
        return {key: value.strip() if isinstance(value, str) else value for key, value in data.items()}

    @property
    def memory_file(self) -> Path:
        return self.memory_dir / "memory.json"

    @property
    def history_file(self) -> Path:
        return self.state_dir / "history"

    def api_key_value(self) -> str | None:
        return self.api_key.get_secret_value() if self.api_key is not None else None

    def with_changes(self, **changes: Any) -> Settings:
        """A copy with some settings changed and checked (e.g. /model, /permission)."""
        try:
            return self.model_validate({**dict(self), **changes})
        except ValidationError as err:
            raise ConfigError(_problem(err.errors()[0], "")) from None


SETTING_NAMES: tuple[str, ...] = tuple(Settings.model_fields)


def load_settings(
    cli: Mapping[str, Any] | None = None,
    *,
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    mcp_config: Sequence[Path] = (),
) -> Settings:
    """Raises ConfigError. `cli`: the flags given (None is not given); `mcp_config`: `--mcp-config` files,
    whose servers join the config file's (a JSON server replaces a TOML one of the same name)."""
    environ = os.environ if environ is None else environ
    home = Path(environ.get("HOME") or environ.get("USERPROFILE") or Path.home())
    flags = {key: value for key, value in (cli or {}).items() if value is not None}
    path = config_file if config_file is not None else home / ".nanohermes" / "config.toml"
    file = ConfigFile(Settings, path, required=config_file is not None)
    pairs = [*ENV_FALLBACKS.items(), *((name, ENV_PREFIX + name.upper()) for name in SETTING_NAMES)]
    # an empty variable is unset; NANOHERMES_API_KEY, later, wins over OPENAI_API_KEY
    variables = {field: environ[var] for field, var in pairs if environ.get(var)}
    token = _LAYERS.set((file,))
    try:
        settings = Settings(**{**variables, **flags})  # the flags over the variables, both over the file
    except ValidationError as err:
        raise ConfigError(_describe(err.errors()[0], flags, environ, file)) from None
    finally:
        _LAYERS.reset(token)
    servers = dict(settings.mcp_servers)
    for json_path in mcp_config:
        servers.update(read_mcp_json(json_path))
    problem = check_server_names(list(servers))
    if problem:
        raise ConfigError(f"invalid value for --mcp-config: {problem}")
    changes: dict[str, Any] = {name: _expand_user(getattr(settings, name), home) for name in FOLDERS}
    if "language" not in settings.model_fields_set:  # set nowhere: the locale's, not the default
        changes["language"] = _language_from_locale(environ)
    changes["mcp_servers"] = {
        name: server.model_copy(update={"cwd": _expand_user(server.cwd, home)}) if server.cwd else server
        for name, server in servers.items()  # (an update of cwd marks it as set, wrong for a url server)
    }
    return settings.model_copy(update=changes)


def _language_from_locale(environ: Mapping[str, str]) -> str:
    for var in ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"):
        value = environ.get(var, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def _describe(
    error: ErrorDetails, flags: Mapping[str, Any], environ: Mapping[str, str], file: ConfigFile
) -> str:
    """The error line for the first bad value, naming the layer it came from (the highest holding it)."""
    loc = tuple(str(part) for part in error["loc"])
    field = loc[0] if loc else ""
    if field == "mcp_servers" and len(loc) > 1:  # inside one server's table: only the file has those
        problem = describe_problem(loc[1], {**error, "loc": error["loc"][2:]})
        return f"{file.path}{file.line_of(*loc)}: {problem}"
    if field in flags:
        return _problem(error, "--" + field.replace("_", "-"))
    for variable in (ENV_PREFIX + field.upper(), ENV_FALLBACKS.get(field)):
        if variable and environ.get(variable):
            return _problem(error, variable)
    return _problem(error, f"{'.'.join(loc)} in {file.path}{file.line_of(*loc)}")  # defaults are valid


def _problem(error: ErrorDetails, origin: str) -> str:
    """`invalid value 'x' for ORIGIN: reason` (never the API key, never a whole table)."""
    field = str(error["loc"][0]) if error["loc"] else ""
    value = error.get("ctx", {}).get("shown", error["input"])  # a URL's password is masked
    quoted = "" if field == "api_key" else shown(value)
    return f"invalid value{quoted and ' ' + quoted} for {origin or field}: {reason(error)}"


def _expand_user(path: Path, home: Path) -> Path:
    """`~` and `~/…` against the given environment's home (not the process's, as `expanduser` would)."""
    return home.joinpath(*path.parts[1:]) if path.parts[:1] == ("~",) else path
