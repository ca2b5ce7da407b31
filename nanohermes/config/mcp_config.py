"""MCP server configuration (SPEC §10): the `[mcp_servers.NAME]` TOML table, the JSON `mcpServers`
form (`--mcp-config`) and ACP's list. It lives beside settings, which validate the TOML form with it."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from nanohermes.config.config_file import read_text
from nanohermes.core.errors import JSON_ERRORS, ConfigError, json_problem

SECRET_KEYS = ("env", "headers")
"""Values under these keys are never shown in an error (tokens live there)."""
JSON_TYPES = ("stdio", "http", "streamable-http", "streamable_http", "streamableHttp")
TOOL_NAME_MAX = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _http_url(value: str) -> str:
    if not value.strip().startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    return value.strip()


class McpServerConfig(BaseModel):
    """One MCP server: `command` (stdio) or `url` (streamable HTTP), plus the common options."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: Annotated[str, AfterValidator(_not_blank)] | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: Path | None = None
    url: Annotated[str, AfterValidator(_http_url)] | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    enabled: bool = True
    startup_timeout: float = Field(10.0, gt=0, le=3600, allow_inf_nan=False)
    tool_timeout: float = Field(60.0, gt=0, le=86400, allow_inf_nan=False)
    trusted: bool = False
    enabled_tools: tuple[str, ...] | None = None  # only these are offered (Codex's key); None: all
    disabled_tools: tuple[str, ...] = ()  # not offered (applied after enabled_tools)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a stdio server) or url (a streamable HTTP server)")
        if self.url is not None:
            given = [key for key in ("args", "env", "cwd") if key in self.model_fields_set]
            if given:
                raise ValueError(f"{given[0]} is for stdio servers (with command), not with url")
        elif "headers" in self.model_fields_set:
            raise ValueError("headers is for HTTP servers (with url), not with command")
        return self

    def offers(self, tool: str) -> bool:
        allowed = self.enabled_tools is None or tool in self.enabled_tools
        return allowed and tool not in self.disabled_tools

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    def target(self) -> str:
        """For listings: the command line or the URL (never env or headers)."""
        if self.url is not None:
            return self.url
        return " ".join([str(self.command), *self.args])


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_variables(config: McpServerConfig, environ: Mapping[str, str]) -> McpServerConfig:
    """`${VAR}` and `${VAR:-default}` replaced from `environ` (Claude Code's form), so tokens stay out
    of the config file. Raises ConfigError naming a variable unset (or empty) without a default."""

    def value(match: re.Match[str]) -> str:
        found = environ.get(match.group(1))
        if found:
            return found
        if match.group(2) is not None:
            return match.group(2)
        raise ConfigError(f"environment variable {match.group(1)} is not set (its config uses it)")

    def expand(text: str) -> str:
        return _VARIABLE.sub(value, text) if "${" in text else text

    return config.model_copy(
        update={
            "command": None if config.command is None else expand(config.command),
            "args": tuple(expand(arg) for arg in config.args),
            "cwd": None if config.cwd is None else Path(expand(str(config.cwd))),
            "env": {key: expand(item) for key, item in config.env.items()},
            "url": None if config.url is None else expand(config.url),
            "headers": {key: expand(item) for key, item in config.headers.items()},
        }
    )


def sanitize(text: str) -> str:
    """Characters outside [A-Za-z0-9_-] become `_` (tool names must match the API's pattern)."""
    return _UNSAFE.sub("_", text)


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, sanitized; a longer name than 64 characters is cut, ending in a hash
    of the whole (two long names that share their first 64 characters stay apart)."""
    name = f"mcp__{sanitize(server)}__{sanitize(tool)}"
    return name if len(name) <= TOOL_NAME_MAX else with_hash(name, f"{server}/{tool}")


def with_hash(name: str, key: str) -> str:
    """`name` cut to end in `_` and a short hash of `key` (≤ 64 characters in all)."""
    suffix = "_" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:6]
    return name[: TOOL_NAME_MAX - len(suffix)] + suffix


def check_server_names(names: Sequence[str]) -> str | None:
    """A problem with a set of server names (empty, or two the same once sanitized), or None."""
    seen: dict[str, str] = {}
    for name in names:
        if not name.strip():
            return "a server name is empty"
        key = sanitize(name)
        if key in seen:
            return f"servers {seen[key]!r} and {name!r} have the same tool prefix mcp__{key}__"
        seen[key] = name
    return None


def read_mcp_json(path: Path) -> dict[str, McpServerConfig]:
    """Servers of a `{"mcpServers": {NAME: {...}}}` file. Raises ConfigError naming the file and line."""
    text = read_text(path, "MCP config file", "--mcp-config")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}, line {err.lineno}: not valid JSON ({err.msg})", "fix that line") from None
    except JSON_ERRORS as err:  # an integer of 5,000 digits, arrays nested 100,000 deep
        raise ConfigError(f"{path}: not valid JSON ({json_problem(err)})") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f'{path}: no "mcpServers" object', 'the form is {"mcpServers": {"NAME": {...}}}')
    configs = {name: _json_server(name, entry, path, text) for name, entry in servers.items()}
    problem = check_server_names(list(configs))  # (load_settings checks them with the config file's)
    if problem:
        raise ConfigError(f"{path}: {problem}", "rename one of them")
    return configs


def _json_server(name: str, entry: Any, path: Path, text: str) -> McpServerConfig:
    where = f"{path}{_json_line(text, name)}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: server {name!r} must be an object with command or url")
    values = dict(entry)
    kind = values.pop("type", None)
    if kind == "sse":
        raise ConfigError(
            f"{where}: server {name!r} uses the old SSE transport, which nanohermes does not speak",
            "use the server's streamable HTTP endpoint (type http)",
        )
    if kind is not None and kind not in JSON_TYPES:
        raise ConfigError(f"{where}: server {name!r} has unknown type {kind!r}", "use stdio or http")
    if "disabled" in values:  # the form some editors write
        disabled = values.pop("disabled")
        if not isinstance(disabled, bool):  # `not "false"` would disable the server
            raise ConfigError(f"{where}: server {name!r}: disabled must be true or false, not {disabled!r}")
        values["enabled"] = not disabled
    try:
        return McpServerConfig.model_validate(values)
    except ValidationError as err:
        first = err.errors()[0]
        key = str(first["loc"][0]) if first["loc"] else ""
        line = _json_line(text, name, key) if key else ""
        place = f"{path}{line}" if line else where
        raise ConfigError(f"{place}: {describe_problem(name, first)}") from None


def _json_line(text: str, *keys: str) -> str:
    """`, line N` of the last key's `"KEY":` in a JSON text, each key searched from the one before, or ""."""
    lines, start, number = text.splitlines(), 0, None
    for key in keys:
        pattern = re.compile(rf'"{re.escape(json.dumps(key)[1:-1])}"\s*:')
        number = next((n for n in range(start, len(lines)) if pattern.search(lines[n])), None)
        start = start if number is None else number
    return f", line {number + 1}" if number is not None else ""


def describe_problem(server: str, error: Mapping[str, Any]) -> str:
    """One line for a validation error of one server's table (values under env/headers never shown)."""
    loc = [str(part) for part in error.get("loc", ())]
    message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
    if error.get("type") == "extra_forbidden" and loc:
        allowed = ", ".join(McpServerConfig.model_fields)
        return f"MCP server {server!r}: unknown key {loc[0]!r} (allowed: {allowed})"
    if not loc:
        return f"MCP server {server!r}: {message}"
    value = error.get("input")
    shown = "" if loc[0] in SECRET_KEYS or isinstance(value, dict | list) else f" {value!r}"
    return f"MCP server {server!r}: invalid value{shown} for {'.'.join(loc)}: {message}"


def servers_from_acp(items: Sequence[Mapping[str, Any]]) -> dict[str, McpServerConfig]:
    """ACP's `mcpServers` list (env and headers as `[{name, value}]`) as configs. Raises ConfigError."""
    configs: dict[str, McpServerConfig] = {}
    for item in items:
        if item.get("url") is not None:  # (SSE servers were left out by acp.convert, with a note)
            values: dict[str, Any] = {"url": item["url"], "headers": _pairs(item.get("headers"))}
        else:
            values = {"command": item.get("command"), "env": _pairs(item.get("env"))}
            values["args"] = item.get("args") or []
        try:
            configs[item["name"]] = McpServerConfig.model_validate(values)
        except ValidationError as err:
            raise ConfigError(describe_problem(item["name"], err.errors()[0])) from None
    problem = check_server_names(list(configs))
    if problem or len(configs) != len(items):
        raise ConfigError(f"MCP servers: {problem or 'two servers have the same name'}")
    return configs


def _pairs(pairs: Sequence[Mapping[str, str]] | None) -> dict[str, str]:
    return {pair["name"]: pair["value"] for pair in pairs or []}
