"""Custom slash commands (README "Custom commands and skills"): `/NAME args` sends the body of
`NAME.md`, `$ARGUMENTS` and `$1`, `$2`… filled in (a body without any gets the arguments appended)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from nanohermes.core.frontmatter import front_matter, load_definitions, read_definition, unquote
from nanohermes.core.types import shorten

COMMAND_MAX_BYTES = 64 * 1024
COMMAND_KEYS = ("description", "argument-hint", "allowed-tools", "model", "disable-model-invocation")
BUILTIN_COMMANDS = frozenset(
    ("help", "exit", "reset", "compact", "memory", "session", "sessions", "model", "permission", "tokens")
    + ("diff", "undo", "checkpoints", "mcp")
)
"""The REPL's own commands (ui/commands.py; a test keeps the two alike): a file may not take a name."""
_PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9][0-9]?)")


@dataclass(frozen=True)
class CustomCommand:
    name: str
    description: str
    body: str
    hint: str = ""


def load_commands(workspace: Path, state_dir: Path) -> tuple[dict[str, CustomCommand], list[str]]:
    return load_definitions("commands", "*.md", "custom command", workspace, state_dir, _parse)


def _parse(path: Path, inside: Path | None) -> CustomCommand:
    name = path.stem
    if name.lower() in BUILTIN_COMMANDS:
        raise ValueError(f"/{name.lower()} is a built-in command")
    meta, body = front_matter(read_definition(path, COMMAND_MAX_BYTES, inside), COMMAND_KEYS)
    if not body:
        raise ValueError("the body (the text after the front matter) is empty")
    description = unquote(meta.get("description", "")) or shorten(body.splitlines()[0], 80)
    return CustomCommand(name, description, body, unquote(meta.get("argument-hint", "")))


def expand_command(commands: Mapping[str, CustomCommand], text: str) -> str | None:
    """The message `/NAME args` stands for; None when `text` is no custom command."""
    first, arguments = (text.split(maxsplit=1) + ["", ""])[:2]
    command = commands.get(first[1:]) if first.startswith("/") else None
    if command is None:
        return None
    arguments = arguments.strip()
    if not _PLACEHOLDER.search(command.body):
        return f"{command.body}\n\n{arguments}" if arguments else command.body
    try:
        words = shlex.split(arguments)
    except ValueError:  # an unclosed quote: split on whitespace
        words = arguments.split()

    def value(match: re.Match[str]) -> str:
        if match[1] == "ARGUMENTS":
            return arguments
        index = int(match[1]) - 1
        return words[index] if index < len(words) else ""

    return _PLACEHOLDER.sub(value, command.body)
