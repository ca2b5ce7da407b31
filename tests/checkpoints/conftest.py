"""The checkpoint tests' workspace: a small project with every kind of file a turn can change."""

from __future__ import annotations

from pathlib import Path

import pytest
from cp_helpers import populate


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    populate(root)
    return root
