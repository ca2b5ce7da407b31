"""Helpers for the checkpoint tests: a workspace with every kind of file, its exact picture, and turns
run through the real tool runner."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

from nanohermes.checkpoints import Checkpoints
from nanohermes.core.cancel import CancelToken
from nanohermes.core.events import ToolFinished
from nanohermes.core.protocols import TurnChanges
from nanohermes.core.types import ToolCall, ToolResult
from nanohermes.tools import ToolRunner

BINARY = bytes(range(256)) * 4 + b"\x00\xff\xfe"


def populate(root: Path) -> None:
    """keep.txt (edited), doomed.bin (binary, executable; deleted), moved.txt (renamed), private.txt
    (0600, overwritten), a .gitignore'd log, and a nested file."""
    (root / "keep.txt").write_bytes(b"line one\nline two\r\nno newline at end")
    (root / "doomed.bin").write_bytes(BINARY)
    (root / "doomed.bin").chmod(0o755)
    (root / "moved.txt").write_text("move me\n")
    (root / "private.txt").write_text("secret-ish\n")
    (root / "private.txt").chmod(0o600)
    (root / ".gitignore").write_text("*.log\n")
    (root / "build.log").write_text("old log\n")
    (root / "src").mkdir()
    (root / "src" / "util.py").write_text("def f():\n    return 1\n")


def picture(root: Path) -> dict[str, tuple[str, int, bytes]]:
    """Every file and symlink under `root` (outside .git): kind, permission bits, bytes."""
    seen: dict[str, tuple[str, int, bytes]] = {}
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(directory, d)))]:
            path = Path(directory) / name
            info = path.lstat()
            rel = path.relative_to(root).as_posix()
            if stat.S_ISLNK(info.st_mode):
                seen[rel] = ("link", 0, os.fsencode(os.readlink(path)))
            else:
                seen[rel] = ("file", stat.S_IMODE(info.st_mode), path.read_bytes())
    return seen


def git_state(root: Path) -> dict[str, Any]:
    """The user's repository as git sees it, read without refreshing the index."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "--no-optional-locks", *args], cwd=root, capture_output=True, text=True, check=True
        ).stdout

    dot_git = {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted((root / ".git").rglob("*"))
        if p.is_file()
    }
    return {"head": git("rev-parse", "HEAD"), "status": git("status", "--porcelain"), "files": dot_git}


def init_git(root: Path) -> None:
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=root,
            check=True,
            capture_output=True,
        )


def make(workspace: Path, home: Path, **options: Any) -> Checkpoints:
    """Checkpoints of session `s1` in `workspace`, state under `home`."""
    return Checkpoints(workspace, home / ".nanohermes", home / "sessions" / "s1.json", **options)


def runner_for(root: Path, checkpoints: Checkpoints) -> ToolRunner:
    return ToolRunner(root, permission="auto", approver=None, store=None, checkpoints=checkpoints)


def turn(
    checkpoints: Checkpoints, runner: ToolRunner, *calls: tuple[str, dict[str, Any]], prompt: str = "do it"
) -> tuple[TurnChanges, list[ToolResult]]:
    """One agent turn: each call in its own batch (in order), between begin_turn and end_turn."""
    checkpoints.begin_turn(prompt)
    results: list[ToolResult] = []
    for number, (name, args) in enumerate(calls, start=1):
        batch = [ToolCall(f"call_{number}", name, json.dumps(args))]
        for event in runner.run_calls(batch, CancelToken()):
            if isinstance(event, ToolFinished):
                results.append(event.result)
    return checkpoints.end_turn(), results


EVERY_CHANGE: tuple[tuple[str, dict[str, Any]], ...] = (
    ("write_file", {"path": "new.txt", "content": "brand new\n"}),
    ("write_file", {"path": "private.txt", "content": "overwritten\n"}),
    ("edit_file", {"path": "keep.txt", "old": "line two", "new": "LINE TWO"}),
    ("run_shell", {"command": "rm doomed.bin && mv moved.txt src/renamed.txt && printf 'x\\0y' > made.bin"}),
    (
        "run_shell",
        {"command": "echo more >> build.log && chmod +x src/util.py && mkdir -p a/b && echo z > a/b/c"},
    ),
)
"""A turn that writes, edits, and runs rm / mv / printf > (and touches an ignored file)."""
