"""Skills in the agentskills.io format (README "Custom commands and skills"): the system prompt lists
each skill; the `skill` tool returns its instructions."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from nanohermes.core.errors import ToolError
from nanohermes.core.frontmatter import front_matter, load_definitions, read_definition, unquote
from nanohermes.core.types import shorten
from nanohermes.tools.base import Tool, tool_from_function

SKILL_FILE = "SKILL.md"
SKILL_MAX_BYTES = 64 * 1024
SKILL_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
SKILLS_LISTED = 50
DESCRIPTION_CHARS = 200
FILES_LISTED = 50


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    folder: Path
    shown: str  # the folder as the model names it: relative to the workspace when inside it


def load_skills(workspace: Path, state_dir: Path) -> tuple[dict[str, Skill], list[str]]:
    return load_definitions("skills", f"*/{SKILL_FILE}", "skill", workspace, state_dir, _parse, SKILLS_LISTED)


def _parse(path: Path, inside: Path | None) -> Skill:
    meta, body = front_matter(read_definition(path, SKILL_MAX_BYTES, inside), SKILL_KEYS)
    name, description = unquote(meta.get("name", "")), " ".join(unquote(meta.get("description", "")).split())
    folder = path.parent
    if name != folder.name:
        raise ValueError(f"its name {shorten(name, 70)!r} is not its folder's {shorten(folder.name, 70)!r}")
    if not description or not body:
        raise ValueError("it needs a description in its front matter and instructions after it")
    shown = str(folder.relative_to(inside)) if inside is not None else str(folder)
    return Skill(name, shorten(description, DESCRIPTION_CHARS), body, folder, shown)


def skills_prompt(skills: Mapping[str, Skill]) -> str:
    if not skills:
        return ""
    lines = "\n".join(f"- {skill.name}: {skill.description}" for skill in skills.values())
    return f"Skills (when a task matches one, call skill(name) for its instructions first):\n{lines}"


def make_skill_tool(skills: Mapping[str, Skill]) -> Tool:
    def skill(name: str) -> str:
        """Read a skill's instructions.

        Args:
            name: the skill's name
        """
        found = skills.get(name.strip())
        if found is None:
            raise ToolError(f"unknown skill {shorten(name, 70)!r}; available: {', '.join(skills)}")
        files = _other_files(found.folder)
        if not files:
            return found.body
        return f"{found.body}\n\n[Other files in {found.shown} (read_file reads them): {', '.join(files)}]"

    return tool_from_function(skill, summary_arg="name")


def _other_files(folder: Path) -> list[str]:
    names: list[str] = []
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        names += sorted(os.path.relpath(os.path.join(top, f), folder) for f in files if not f.startswith("."))
        if len(names) > FILES_LISTED:
            break
    return [name for name in names if name != SKILL_FILE][:FILES_LISTED]
