"""What the command line asked for, as plain data (SPEC §1), parsed by `app.args`. Stdlib only: it
lives below the UI, so the UI never imports the layer that calls it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class MemoryArgs:
    """`nanohermes memory ACTION [ARG] [--explain]`; `argument` is the action's text or id."""

    action: str
    argument: str = ""
    explain: bool = False
    all_projects: bool = False  # list|search --all: every project's, not just global + this one's
    kind: str = ""  # add KIND TEXT
    project: bool = False  # add --project (default: global)
    team: bool = False  # add --team: into `<git top level>/.nanohermes/memory.json`
    history: bool = False  # list|search --history: replaced memories too
    stale: int | None = None  # list --stale DAYS: neither used nor saved for that many days
    target: str = ""  # replace ID TEXT: the id


@dataclass(frozen=True)
class UndoArgs:
    session: str | None = None
    list_only: bool = False
    to: int | None = None
    force: bool = False


@dataclass(frozen=True)
class CliOptions:
    session: str | None = None
    continue_last: bool = False
    config: Path | None = None
    prompt: str | None = None
    json_output: bool = False
    stream_json: bool = False  # --output-format stream-json
    yes: bool = False
    local: bool = False
    verbose: bool = False
    memory: MemoryArgs | None = None
    undo: UndoArgs | None = None
    acp: bool = False  # nanohermes acp
    mcp_config: tuple[Path, ...] = ()  # --mcp-config FILE (repeatable), the JSON `mcpServers` form
    mcp_action: str | None = None  # nanohermes mcp ACTION (only `list`)
    overrides: dict[str, object] = field(default_factory=dict)

    @property
    def secret_files(self) -> tuple[Path, ...]:
        """Files the user named that may hold keys or tokens: hidden from sandboxed commands."""
        return (*((self.config,) if self.config is not None else ()), *self.mcp_config)
