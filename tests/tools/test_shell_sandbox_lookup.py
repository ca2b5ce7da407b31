"""Finding and probing bubblewrap (SPEC §12) where the repository or the system is hostile: a `bwrap`
the repository ships, a probe that never ends, settings naming a link loop."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from nanohermes.tools import sandbox as sandbox_module
from nanohermes.tools.sandbox import Sandbox

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="bubblewrap is Linux only")

PLANTED = "#!/bin/sh\necho planted > {marker}\nexit 1\n"
"""A repository's `bwrap`: it leaves a marker when run, and fails, so an unpatched lookup also says so."""


def plant_bwrap(folder: Path, marker: Path) -> Path:
    program = folder / "bwrap"
    program.write_text(PLANTED.format(marker=marker))
    program.chmod(0o755)
    return program


@pytest.mark.parametrize("entry", ["", ".", "bin", "workspace"])
def test_a_bwrap_the_repository_ships_is_never_run(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    # PATH=":/usr/bin" (an empty entry), "." or "bin" find programs in the current directory; the
    # probe would run the repository's program unconfined at start-up, even in read-only mode.
    marker = tmp_path / "ran.txt"
    (workspace / "bin").mkdir()
    plant_bwrap(workspace, marker)
    plant_bwrap(workspace / "bin", marker)
    first = str(workspace) if entry == "workspace" else entry
    monkeypatch.setenv("PATH", os.pathsep.join([first, os.environ.get("PATH", os.defpath)]))
    monkeypatch.chdir(workspace)
    sandbox = Sandbox.detect("auto", network=False, workspace=workspace)
    assert not marker.exists(), "the repository's bwrap was run"
    system = shutil.which("bwrap", path=os.environ.get("PATH", "").removeprefix(first + os.pathsep))
    if system is not None:  # a real one later on PATH is still found, by its absolute path
        assert sandbox.bwrap == system
    else:
        assert not sandbox.active
        assert "not used" in sandbox.problem
        assert "not used" in sandbox.startup_warning  # said at start-up: commands run unconfined


def test_a_probe_that_never_ends_is_one_short_line(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hanging = tmp_path / "hanging-bwrap"
    hanging.write_text("#!/bin/sh\nexec sleep 1000\n")
    hanging.chmod(0o755)
    monkeypatch.setattr(sandbox_module, "PROBE_TIMEOUT", 0.5)
    sandbox = Sandbox.detect("auto", network=False, workspace=workspace, executable=str(hanging))
    assert not sandbox.active
    assert sandbox.problem == "bubblewrap cannot start: it did not finish within 0.5 s"
    assert len(sandbox.status) < 100  # not the probe's whole command line, in the bottom bar


def test_a_hidden_path_that_is_a_link_loop_does_not_stop_start_up(workspace: Path, tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)  # memory_dir = a link loop: nothing there to hide, and no crash
    config = tmp_path / "config.toml"
    hidden = [loop, loop / "memory.json", config]
    # `true` stands in for a bubblewrap that starts: the paths to hide are worked out either way
    sandbox = Sandbox.detect("auto", network=False, workspace=workspace, hidden=hidden, executable="true")
    assert sandbox.active
    assert sandbox.hidden == (config,)
