"""Fixtures for the tool tests: an outside neighbour of the workspace (tests/conftest.py) holding a secret."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace holding a secret the tools must never reach."""
    root = tmp_path / "outside"
    root.mkdir()
    (root / "secret.txt").write_text("TOP-SECRET\n")
    return root
