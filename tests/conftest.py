"""Shared fixtures. Every test runs with HOME and every nanohermes directory in a temp dir."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_CLEARED_PREFIXES = ("NANOHERMES_", "OPENAI_")
_LOCALE_VARS = ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE")


def pytest_configure(config: pytest.Config) -> None:
    """Tests press Ctrl-C (SIGINT) in the processes they start. A runner started as a background job
    of a non-interactive shell (`(pytest &)`, some CI steps) ignores SIGINT, and every child would
    inherit that and never see the Ctrl-C: the runner takes back the default handling."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME/USERPROFILE at a fresh temp dir and clear settings from the real environment."""
    home = tmp_path_factory.mktemp("home")
    for name in list(os.environ):
        if name.startswith(_CLEARED_PREFIXES) or name in _LOCALE_VARS:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.setenv("NANOHERMES_MEMORY_DIR", str(home / ".nanohermes"))
    monkeypatch.setenv("NANOHERMES_SESSIONS_DIR", str(home / ".nanohermes" / "sessions"))
    monkeypatch.setenv("LANG", "C.UTF-8")
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty project folder to run nanohermes in (tests needing files override or fill it)."""
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A fresh directory outside the workspace and outside /tmp (a sandboxed command's /tmp is its
    own), removed afterwards; skips where /var/tmp is not writable."""
    base = Path("/var/tmp")
    if not os.access(base, os.W_OK):
        pytest.skip("/var/tmp is not writable here")
    folder = Path(tempfile.mkdtemp(dir=base, prefix="nh-test-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
