"""Fixtures for the tool tests: a workspace, and an outside neighbour holding a secret."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace holding a secret the tools must never reach."""
    root = tmp_path / "outside"
    root.mkdir()
    (root / "secret.txt").write_text("TOP-SECRET\n")
    return root
