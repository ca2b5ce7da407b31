"""Ways out of the bubblewrap sandbox (SPEC §12) a hostile command would try: undoing its mounts."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanohermes.core.cancel import CancelToken
from nanohermes.tools.base import CallContext
from nanohermes.tools.sandbox import Sandbox
from nanohermes.tools.shell import ShellTool


def shell(workspace: Path, sandbox: Sandbox, command: str) -> str:
    tool = ShellTool(workspace, timeout=30, sandbox=sandbox)
    return tool.run_shell(command, ctx=CallContext(CancelToken()))


def test_a_command_cannot_undo_the_sandboxs_mounts(workspace: Path, outside_tmp: Path) -> None:
    # Run by root (containers, CI), bubblewrap keeps every capability unless told: `mount -o remount`
    # made the whole disk writable and `umount` showed the hidden keys.
    private = outside_tmp / "nanohermes-state"
    private.mkdir()
    (private / "config.toml").write_text('api_key = "sk-HIDDEN-KEY"\n')
    sandbox = Sandbox.detect("auto", network=False, workspace=workspace, hidden=[private])
    if not sandbox.active:
        pytest.skip(f"bubblewrap cannot run here: {sandbox.problem}")
    written = outside_tmp / "escaped.txt"
    result = shell(
        workspace,
        sandbox,
        f"grep CapEff /proc/self/status; mount -o remount,rw /; umount {private}; "
        f"echo out > {written}; cat {private}/config.toml; echo finished",
    )
    assert "finished" in result, result
    assert not written.exists(), "the command wrote outside the workspace"
    assert "sk-HIDDEN-KEY" not in result
    assert "CapEff:\t0000000000000000" in result
