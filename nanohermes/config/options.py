"""What the command line asked for, as plain data (SPEC §1). Stdlib only.

Parsed by `nanohermes.app.args`; read by the front ends (`nanohermes.ui`) and the composition root.
It lives below both, so the UI never imports the command-line layer that calls it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class MemoryArgs:
    """`nanohermes memory ACTION [ARG] [--explain]`."""

    action: str
    argument: str = ""
    explain: bool = False
    all_projects: bool = False
    """`list|search --all`: every entry, with its project (default: global + this project's)."""
    kind: str = ""
    """`add KIND TEXT`: the kind (the text is `argument`)."""
    project: bool = False
    """`add --project`: the memory belongs to this project (default: global)."""
    team: bool = False
    """`add --team`: into the repository's team memory (`<git top level>/.nanohermes/memory.json`)."""
    history: bool = False
    """`list|search --history`: the replaced memories too, with what replaced them."""
    stale: int | None = None
    """`list --stale DAYS`: only the memories neither used nor saved for that many days."""
    target: str = ""
    """`replace ID TEXT`: the id (the text is `argument`)."""


@dataclass(frozen=True)
class UndoArgs:
    """`nanohermes undo [--session S] [--list] [--to N] [--force]`."""

    session: str | None = None
    list_only: bool = False
    to: int | None = None
    force: bool = False


@dataclass(frozen=True)
class CliOptions:
    """Everything the command line said, beyond the settings it overrides."""

    session: str | None = None
    continue_last: bool = False
    config: Path | None = None
    prompt: str | None = None
    json_output: bool = False
    stream_json: bool = False
    """`--output-format stream-json`: one JSON object a line as the `-p` turn happens."""
    yes: bool = False
    local: bool = False
    verbose: bool = False
    memory: MemoryArgs | None = None
    undo: UndoArgs | None = None
    acp: bool = False
    """`nanohermes acp`: serve the Agent Client Protocol on stdio (SPEC §9)."""
    mcp_config: tuple[Path, ...] = ()
    """`--mcp-config FILE` (repeatable): MCP servers in the JSON `mcpServers` form (SPEC §10)."""
    mcp_action: str | None = None
    """`nanohermes mcp ACTION` (only `list`)."""
    overrides: dict[str, object] = field(default_factory=dict)

    @property
    def secret_files(self) -> tuple[Path, ...]:
        """Files the user named that may hold keys or tokens (the config file, MCP configs with
        `env` and `headers`): hidden from sandboxed commands."""
        return (*((self.config,) if self.config is not None else ()), *self.mcp_config)
