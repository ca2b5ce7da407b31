"""Fixtures for MCP tests (helpers in mcp_helpers.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_helpers import DEMO, Managers, accepts, free_port, wait_for


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    path = tmp_path / "markers"
    path.mkdir()
    return path


@pytest.fixture
def managers(tmp_path: Path) -> Iterator[Managers]:
    made = Managers(tmp_path)
    yield made
    for manager in made.made:
        manager.close()


@pytest.fixture
def http_demo(markers: Path) -> Iterator[str]:
    """The demo server on streamable HTTP at 127.0.0.1; yields its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(DEMO), "--http", str(port), "--marker-dir", str(markers)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_for(lambda: accepts(port), 30), "the HTTP demo server did not start"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


PUBLISHED_OPT_IN = "NANOHERMES_MCP_PUBLISHED_TESTS"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `mcp_published` install a server from PyPI: they run only when asked for."""
    expr = str(config.getoption("markexpr", "") or "")
    asked = "mcp_published" in expr and "not mcp_published" not in expr
    if asked or os.environ.get(PUBLISHED_OPT_IN) == "1":
        return
    reason = (
        "installs a published MCP server from PyPI: "
        f"opt in with 'pytest -m mcp_published' or {PUBLISHED_OPT_IN}=1"
    )
    for item in items:
        if item.get_closest_marker("mcp_published") is not None:
            item.add_marker(pytest.mark.skip(reason=reason))
