"""Custom slash commands (`.nanohermes/commands/NAME.md`) and skills (`.nanohermes/skills/NAME/SKILL.md`):
what is read, what is skipped with one note, and how `/NAME args` expands."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from nanohermes.agent.custom_commands import BUILTIN_COMMANDS, CustomCommand, expand_command, load_commands
from nanohermes.agent.skills import DESCRIPTION_CHARS, SKILLS_LISTED, load_skills, make_skill_tool
from nanohermes.core.errors import ToolError
from nanohermes.core.frontmatter import front_matter
from nanohermes.ui.commands import COMMANDS


def _write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def _command(root: Path, name: str, content: str | bytes) -> Path:
    return _write(root / ".nanohermes" / "commands" / f"{name}.md", content)


def _skill(root: Path, name: str, content: str | bytes) -> Path:
    return _write(root / ".nanohermes" / "skills" / name / "SKILL.md", content)


def test_builtin_names_are_the_repls_commands() -> None:
    assert {f"/{name}" for name in BUILTIN_COMMANDS} == set(COMMANDS)


def test_arguments_replace_placeholders_and_the_projects_command_wins(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    state_dir = home / ".nanohermes"
    _command(workspace, "fix", "---\ndescription: Fix an issue\n---\nFix $1 in $2 ($ARGUMENTS); not $3.")
    _command(home, "fix", "the user's fix")
    _command(home, "plain", "Review the diff.")
    commands, problems = load_commands(workspace, state_dir)
    assert problems == []
    assert commands["fix"].description == "Fix an issue"
    assert commands["plain"].description == "Review the diff."  # no description: the first line
    assert (
        expand_command(commands, '/fix "bug 12" src/a.py')
        == 'Fix bug 12 in src/a.py ("bug 12" src/a.py); not .'
    )
    assert expand_command(commands, "/fix it 'unclosed") == "Fix it in 'unclosed (it 'unclosed); not ."
    assert expand_command(commands, "/plain") == "Review the diff."
    assert expand_command(commands, "/plain only the tests") == "Review the diff.\n\nonly the tests"
    assert expand_command(commands, "/unknown x") is None
    assert expand_command(commands, "fix it") is None


def test_bad_command_files_are_skipped_with_one_note_each(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    state_dir = home / ".nanohermes"
    _command(workspace, "help", "my help")  # a built-in's name
    _command(workspace, "Memory", "my memory")
    _command(workspace, "has space", "x")
    _command(workspace, "broken", "---\ndescription: never closed\nbody")
    _command(workspace, "typo", "---\ndescriptoin: x\n---\nbody")
    _command(workspace, "huge", "x" * (64 * 1024 + 1))
    _command(workspace, "latin", b"caf\xe9")
    _command(workspace, "hidden", "Do this\U000e0041\U000e0042 quietly")  # tag characters: unseen text
    _command(workspace, "empty", "---\ndescription: nothing\n---\n")
    os.mkfifo(workspace / ".nanohermes" / "commands" / "fifo.md")
    (workspace / ".nanohermes" / "commands" / "leak.md").symlink_to(_write(tmp_path / "secret", "key"))
    _command(workspace, "good", "fine")
    loaded: list[tuple[dict[str, CustomCommand], list[str]]] = []
    worker = threading.Thread(target=lambda: loaded.append(load_commands(workspace, state_dir)), daemon=True)
    worker.start()
    worker.join(10)
    assert loaded, "loading commands blocked on a FIFO"
    commands, problems = loaded[0]
    assert list(commands) == ["good"]
    assert len(problems) == 11
    reasons = {}
    for problem in problems:
        path, why = problem.removeprefix("custom command ").split(" skipped: ")
        reasons[Path(path).stem] = why
    assert reasons["help"] == "/help is a built-in command"
    assert reasons["Memory"] == "/memory is a built-in command"
    assert "only letters, digits" in reasons["has space"]
    assert "never closed" in reasons["broken"]
    assert "unknown front matter key 'descriptoin'" in reasons["typo"]
    assert "larger than 65,536 bytes" in reasons["huge"]
    assert "not UTF-8 text (byte 0xe9" in reasons["latin"]
    assert "invisible character U+E0041" in reasons["hidden"]
    assert "body" in reasons["empty"]
    assert "not a regular file" in reasons["fifo"]
    assert "outside the workspace" in reasons["leak"]


def test_front_matter_takes_continued_lines_lists_and_block_scalars() -> None:
    keys = ("name", "description", "metadata", "tools")
    text = (
        "---\nname: a\ndescription: >-\n  two\n  lines\nmetadata:\n  author: me\ntools:\n- x\n- y\n---\nbody"
    )
    meta, body = front_matter(text, keys)
    assert meta == {"name": "a", "description": "two lines", "metadata": "author: me", "tools": "x, y"}
    assert body == "body"


def test_skills_are_listed_and_their_instructions_read_on_demand(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    state_dir = home / ".nanohermes"
    _skill(
        workspace,
        "pdf",
        "---\nname: pdf\ndescription: Fill PDF forms.\nlicense: MIT\n---\nUse scripts/fill.py.",
    )
    _write(workspace / ".nanohermes" / "skills" / "pdf" / "scripts" / "fill.py", "print()")
    _skill(home, "pdf", "---\nname: pdf\ndescription: the user's\n---\nignored")
    _skill(home, "notes", f"---\nname: notes\ndescription: {'d' * 500}\n---\nTake notes.")
    skills, problems = load_skills(workspace, state_dir)
    assert problems == []
    assert skills["pdf"].description == "Fill PDF forms."
    assert len(skills["notes"].description) == DESCRIPTION_CHARS
    tool = make_skill_tool(skills)
    assert not tool.mutating
    answer = tool.func(name="pdf")
    assert answer.startswith("Use scripts/fill.py.")
    assert "[Other files in .nanohermes/skills/pdf (read_file reads them): scripts/fill.py]" in answer
    assert tool.func(name="notes") == "Take notes."
    with pytest.raises(ToolError, match="unknown skill 'nope'; available: pdf, notes"):
        tool.func(name="nope")


def test_bad_skills_are_skipped_with_one_note_each(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    state_dir = home / ".nanohermes"
    _skill(workspace, "other", "---\nname: renamed\ndescription: x\n---\nbody")
    _skill(workspace, "bad name", "---\nname: bad name\ndescription: x\n---\nbody")
    _skill(workspace, "nodesc", "---\nname: nodesc\n---\nbody")
    _skill(workspace, "broken", "---\nname: broken\ndescription: x\n")
    _skill(workspace, "bidi", "---\nname: bidi\ndescription: safe \u202eelif\n---\nbody")
    _skill(workspace, "huge", "---\nname: huge\ndescription: x\n---\n" + "x" * 70_000)
    outside = _skill(tmp_path / "elsewhere", "linked", "---\nname: linked\ndescription: x\n---\nbody")
    (workspace / ".nanohermes" / "skills" / "linked").symlink_to(outside.parent)
    skills, problems = load_skills(workspace, state_dir)
    assert skills == {}
    assert len(problems) == 7
    text = "\n".join(problems)
    for expected in (
        "its name 'renamed' is not its folder's 'other'",
        "only letters, digits",
        "needs a description",
        "never closed",
        "invisible character U+202E",
        "larger than 65,536 bytes",
        "outside the workspace",
    ):
        assert expected in text


def test_at_most_fifty_skills_are_listed_with_one_note_for_the_rest(tmp_path: Path) -> None:
    for number in range(SKILLS_LISTED + 3):
        _skill(tmp_path, f"s{number:03}", f"---\nname: s{number:03}\ndescription: skill {number}\n---\nbody")
    skills, problems = load_skills(tmp_path, tmp_path / "home")
    assert len(skills) == SKILLS_LISTED
    assert problems == [f"3 more skills skipped: at most {SKILLS_LISTED} are listed"]
