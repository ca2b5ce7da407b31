"""The ACP tests reuse the MCP tests' demo server and helpers (tests/mcp/mcp_helpers.py); their
workspace is resolved (the server compares it with the paths it reports)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

MCP_TESTS = str(Path(__file__).resolve().parent.parent / "mcp")
if MCP_TESTS not in sys.path:
    sys.path.append(MCP_TESTS)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path.resolve()
