"""What the manager knows of each server, as plain data: the UI imports it without loading `mcp`."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from nanohermes.config.mcp_config import McpServerConfig
from nanohermes.tools.base import Tool

if TYPE_CHECKING:
    from nanohermes.mcp.connection import Connection

State = Literal["disabled", "starting", "ready", "crashed", "failed", "closed"]


@dataclass(frozen=True)
class ToolInfo:
    name: str  # as the model sees it: mcp__server__tool
    remote: str
    description: str
    read_only: bool


@dataclass(frozen=True)
class ServerStatus:
    name: str
    transport: str
    target: str
    state: State
    trusted: bool
    tools: tuple[ToolInfo, ...]
    last_error: str


@dataclass
class ServerEntry:
    """One configured server, as the manager tracks it (mutated on the loop, under its lock)."""

    name: str
    config: McpServerConfig
    state: State = "starting"
    tools: list[Tool] = field(default_factory=list)
    infos: tuple[ToolInfo, ...] = ()
    last_error: str = ""
    connection: Connection | None = None
    started: threading.Event = field(default_factory=threading.Event)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one restart at a time
    stale: bool = False  # its tool list changed and was not listed again yet
    refresh: asyncio.Task[None] | None = None
    left_out: dict[str, str] = field(default_factory=dict)  # name → why, as last told to the user

    def status(self) -> ServerStatus:
        config, state = self.config, self.state
        return ServerStatus(
            self.name, config.transport, config.target(), state, config.trusted, self.infos, self.last_error
        )
