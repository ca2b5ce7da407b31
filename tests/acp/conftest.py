"""The ACP tests reuse the MCP tests' demo server and helpers (tests/mcp/mcp_helpers.py)."""

from __future__ import annotations

import sys
from pathlib import Path

MCP_TESTS = str(Path(__file__).resolve().parent.parent / "mcp")
if MCP_TESTS not in sys.path:
    sys.path.append(MCP_TESTS)
