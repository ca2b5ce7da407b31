"""Errors found before a call runs (bad arguments, a path outside the workspace) echo what the model
sent: they are capped at `tool_output_chars` like any result, so a 1 MB argument never becomes a
2 MB result kept in the history and sent with every later request."""

from __future__ import annotations

import json
from pathlib import Path

from tool_helpers import auto_runner, call, results, run


def test_an_error_echoing_a_huge_path_is_capped(workspace: Path) -> None:
    runner = auto_runner(workspace, tool_output_chars=2_000)
    sent = json.dumps({"path": "../" + "x" * 1_000_000})
    got = results(run(runner, [call("read_file", sent)]))[0]
    assert not got.ok
    assert got.content.startswith("ERROR: path '../xxx")
    assert len(got.content) <= 2_000


def test_an_error_listing_unknown_arguments_names_a_few(workspace: Path) -> None:
    runner = auto_runner(workspace)
    names = {f"extra_{n:06d}": 1 for n in range(100_000)}
    got = results(run(runner, [call("read_file", json.dumps({"path": "a.txt", **names}))]))[0]
    assert got.content == (
        "ERROR: read_file got unknown argument(s) extra_000000, extra_000001, extra_000002, extra_000003, "
        "extra_000004 and 99,995 more; allowed: path, offset, limit"
    )


def test_the_approval_preview_of_a_huge_one_line_file_is_short(workspace: Path) -> None:
    """A new 5 MB file on one line was a 5 MB approval preview (diffs were cut by lines only)."""
    from tool_helpers import FakeApprover

    from nanohermes.tools import ToolRunner

    approver = FakeApprover()
    runner = ToolRunner(workspace, permission="ask", approver=approver, store=None)
    content = "x" * 5_000_000
    got = results(run(runner, [call("write_file", json.dumps({"path": "big.txt", "content": content}))]))[0]
    assert got.ok, got.content
    preview = approver.requests[0].detail
    assert len(preview) < 2_000
    assert "4,999,501 more characters" in preview  # the "+" of the diff line counts
    assert (workspace / "big.txt").read_text() == content
