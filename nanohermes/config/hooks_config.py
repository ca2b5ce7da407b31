"""The `[hooks]` setting: commands run at five agent events (Claude Code's hooks contract), each a
string or a table (`command`, `matcher`, `timeout`); `nanohermes.tools.hooks` runs them."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, model_validator

from nanohermes.config.setting_values import Seconds


def _command(value: str) -> str:
    if not value.strip():
        raise ValueError("a hook's command must not be empty")
    return value


def _commands(value: Any) -> Any:
    """A list whose strings are commands: `["x"]` is `[{command = "x"}]`."""
    if not isinstance(value, list | tuple):
        raise ValueError("must be a list of commands")
    return [{"command": item} if isinstance(item, str) else item for item in value]


class Hook(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    command: Annotated[str, AfterValidator(_command)]
    matcher: re.Pattern[str] | None = None  # the whole tool name must match; None matches every tool
    timeout: Seconds = 30.0


HookList = Annotated[tuple[Hook, ...], BeforeValidator(_commands)]


class Hooks(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    pre_tool: HookList = ()
    post_tool: HookList = ()
    user_prompt: HookList = ()
    stop: HookList = ()
    session_start: HookList = ()

    @model_validator(mode="before")
    @classmethod
    def _events(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError("must be a table of hook events ([hooks] in the config file)")
        unknown = [name for name in data if name not in cls.model_fields]
        if unknown:
            raise ValueError(f"unknown hook event {unknown[0]!r} (events: {', '.join(cls.model_fields)})")
        return data
