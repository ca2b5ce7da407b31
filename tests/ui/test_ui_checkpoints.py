"""/diff, /undo, /checkpoints and the sandbox's place in /permission and the bottom bar."""

from __future__ import annotations

import json
from pathlib import Path

from ui_fakes import fake_runtime, plain_console

from nanohermes.checkpoints import Checkpoints
from nanohermes.core.cancel import CancelToken
from nanohermes.core.protocols import ApprovalRequest, Decision
from nanohermes.core.types import ToolCall
from nanohermes.tools import ToolRunner
from nanohermes.tools.sandbox import Sandbox
from nanohermes.ui.command_context import CommandContext
from nanohermes.ui.commands import dispatch
from nanohermes.ui.prompt import sandbox_label, toolbar_text


class Asker:
    def __init__(self, answer: Decision) -> None:
        self.answer = answer
        self.asked: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        return self.answer


class Harness:
    def __init__(self, workspace: Path, home: Path, answer: Decision = Decision.YES) -> None:
        self.workspace = workspace
        self.console, self.out = plain_console(120)
        self.runtime = fake_runtime()
        self.checkpoints = Checkpoints(workspace, home / ".nanohermes", home / "s.json")
        self.runtime.checkpoints = self.checkpoints
        self.asker = Asker(answer)
        self.ctx = CommandContext(
            lambda: self.runtime, self.console, lambda source: None, permission="ask", approver=self.asker
        )
        self.runner = ToolRunner(
            workspace, permission="auto", approver=None, store=None, checkpoints=self.checkpoints
        )

    def agent_turn(self, name: str, **args: object) -> None:
        self.checkpoints.begin_turn(f"please {name}")
        list(self.runner.run_calls([ToolCall("c1", name, json.dumps(args))], CancelToken()))
        self.checkpoints.end_turn()

    def run(self, text: str) -> str:
        start = len(self.out.getvalue())
        dispatch(self.ctx, text)
        return self.out.getvalue()[start:]


def test_diff_undo_and_checkpoints_in_the_repl(tmp_path: Path, isolated_home: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    h = Harness(tmp_path, isolated_home)
    assert "no changes recorded" in h.run("/diff")
    h.agent_turn("edit_file", path="a.txt", old="alpha", new="beta")
    h.agent_turn("run_shell", command="echo new > b.txt")
    diff = h.run("/diff")
    assert "changes of turn 2" in diff
    assert "added    b.txt" in diff
    assert "+new" in diff
    assert "a.txt" not in diff
    every = h.run("/diff all")
    assert "-alpha" in every
    assert "+beta" in every
    listing = h.run("/checkpoints")
    assert "turn 1" in listing
    assert "please run_shell" in listing
    assert "modified a.txt" in " ".join(listing.split())

    undone = h.run("/undo")
    assert "undid turn 2" in undone
    assert "removed b.txt" in undone
    assert not (tmp_path / "b.txt").exists()
    assert "undid turn 1" in h.run("/undo")
    assert (tmp_path / "a.txt").read_text() == "alpha\n"
    assert "nothing to undo" in h.run("/undo")
    assert "undone" in h.run("/checkpoints")
    assert h.asker.asked == []  # no later edits: no question


def test_undo_over_a_later_user_edit_shows_it_and_asks(tmp_path: Path, isolated_home: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    h = Harness(tmp_path, isolated_home, answer=Decision.NO)
    h.agent_turn("write_file", path="a.txt", content="agent\n")
    (tmp_path / "a.txt").write_text("mine\n")
    text = h.run("/undo")
    assert "edited after turn 1" in text
    assert "+mine" in text
    assert "nothing was undone" in text
    assert (tmp_path / "a.txt").read_text() == "mine\n"
    assert "a.txt" in h.asker.asked[0].title
    h.asker.answer = Decision.YES
    assert "undid turn 1" in h.run("/undo")
    assert (tmp_path / "a.txt").read_text() == "alpha\n"


def test_checkpoints_off_says_so(tmp_path: Path) -> None:
    console, out = plain_console(120)
    runtime = fake_runtime()
    ctx = CommandContext(
        lambda: runtime, console, lambda source: None, permission="ask", approver=Asker(Decision.NO)
    )
    dispatch(ctx, "/undo")
    assert "checkpoints are off" in out.getvalue()


def test_permission_and_the_bottom_bar_show_the_sandbox(tmp_path: Path) -> None:
    console, out = plain_console(120)
    runtime = fake_runtime()
    runtime.sandbox = Sandbox("auto", active=True, network=False)
    ctx = CommandContext(
        lambda: runtime, console, lambda source: None, permission="ask", approver=Asker(Decision.NO)
    )
    dispatch(ctx, "/permission")
    assert "shell sandbox: bwrap, network off (setting: sandbox = auto)" in out.getvalue()
    bar = "".join(
        text for _, text in toolbar_text("m", "ask", "s", 3, "", sandbox_label(True, False, "auto"))
    )
    assert "│ sandboxed │" in bar
    assert sandbox_label(False, True, "bwrap") == "shell refused"
    assert sandbox_label(False, True, "auto") == "no sandbox"


def test_diff_shows_escape_sequences_in_names_and_lines_instead_of_obeying_them(
    tmp_path: Path, isolated_home: Path
) -> None:
    h = Harness(tmp_path, isolated_home)
    h.agent_turn("write_file", path="e\x1b[2K.txt", content="\x1b]0;owned\x07 text\n")
    diff = h.run("/diff")
    assert "\x1b" not in diff
    assert "\x07" not in diff
    assert "e\\x1b[2K.txt" in diff
    assert "+\\x1b]0;owned\\x07 text" in diff


def test_checkpoints_shows_escape_sequences_in_file_names_instead_of_obeying_them(
    tmp_path: Path, isolated_home: Path
) -> None:
    """A file the agent's shell command created, named `a\\x1b]0;PWNED\\x07b\\rZ.txt`: /checkpoints
    printed its name raw, an OSC sequence that retitled the window and swallowed what followed."""
    h = Harness(tmp_path, isolated_home)
    h.agent_turn("write_file", path="a\x1b]0;PWNED\x07b\rZ.txt", content="x\n")
    listing = h.run("/checkpoints")
    assert "\x1b" not in listing
    assert "added    a\\x1b]0;PWNED\\x07b\\x0dZ.txt" in listing
