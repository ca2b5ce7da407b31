"""Workspace confinement: every escape is refused, including a symlink swapped in after the check."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tool_helpers import args, auto_runner, call, results, run

from nanohermes.core.errors import ToolError
from nanohermes.tools.base import CallContext
from nanohermes.tools.files import FileTools
from nanohermes.tools.paths import OutsideWorkspace, Workspace
from nanohermes.tools.search import SearchTools

needs_symlinks = pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt", reason="POSIX symlinks")


def escape_corpus(workspace: Path, outside: Path) -> list[str]:
    """Paths that all name something outside the workspace."""
    (workspace / "link_file").symlink_to(outside / "secret.txt")
    (workspace / "link_dir").symlink_to(outside)
    (workspace / "sub").mkdir()
    (workspace / "sub" / "deep_link").symlink_to(outside)
    return [
        "../outside/secret.txt",
        "../x",
        "sub/../../outside/secret.txt",
        str(outside / "secret.txt"),
        str(outside),
        "/etc/passwd",
        "~/anything",
        "link_file",
        "link_dir/secret.txt",
        "link_dir",
        "sub/deep_link/secret.txt",
        "./sub/./deep_link/../deep_link/secret.txt",
    ]


@needs_symlinks
def test_every_escape_is_refused_by_resolve(workspace: Path, outside: Path) -> None:
    ws = Workspace(workspace)
    for path in escape_corpus(workspace, outside):
        with pytest.raises(OutsideWorkspace, match="outside the workspace"):
            ws.resolve(path)


@needs_symlinks
@pytest.mark.parametrize(
    ("tool", "extra"),
    [
        ("read_file", {}),
        ("write_file", {"content": "pwned"}),
        ("edit_file", {"old": "TOP-SECRET", "new": "pwned"}),
        ("list_files", {}),
        ("grep", {"pattern": "SECRET"}),
    ],
)
def test_every_escape_is_refused_by_every_path_tool(
    workspace: Path, outside: Path, tool: str, extra: dict[str, str]
) -> None:
    corpus = escape_corpus(workspace, outside)
    runner = auto_runner(workspace)
    calls = [call(tool, args(path=path, **extra), f"c{i}") for i, path in enumerate(corpus)]
    got = results(run(runner, calls))
    assert [r.call_id for r in got] == [c.id for c in calls]
    leaked = [r for r in got if "TOP-SECRET" in r.content or not r.content.startswith("ERROR:")]
    assert leaked == []
    assert all("outside the workspace" in r.content for r in got)
    assert (outside / "secret.txt").read_text() == "TOP-SECRET\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


@needs_symlinks
def test_symlink_inside_the_workspace_is_followed(workspace: Path) -> None:
    (workspace / "real.txt").write_text("hello\n")
    (workspace / "alias.txt").symlink_to("real.txt")
    ws = Workspace(workspace)
    assert ws.resolve("alias.txt") == (workspace / "real.txt").resolve()
    assert "hello" in FileTools(ws).read_file("alias.txt", ctx=CallContext())


@needs_symlinks
@pytest.mark.parametrize(
    ("checked_path", "swapped", "target"),
    [("d/secret.txt", "d", ""), ("f.txt", "f.txt", "secret.txt")],
    ids=["directory", "file"],
)
def test_path_swapped_for_a_symlink_after_the_check_is_refused(
    workspace: Path, outside: Path, checked_path: str, swapped: str, target: str
) -> None:
    ws = Workspace(workspace)
    (workspace / checked_path).parent.mkdir(exist_ok=True)
    (workspace / checked_path).write_text("inside\n")
    checked = ws.resolve(checked_path)
    (workspace / checked_path).unlink()
    if swapped != checked_path:
        (workspace / swapped).rmdir()
    (workspace / swapped).symlink_to(outside / target)  # the swap, between check and open
    with pytest.raises(ToolError, match="symlink"):
        ws.open_file(checked)
    with pytest.raises(ToolError, match="symlink"):
        ws.replace_into(checked, b"pwned")
    assert (outside / "secret.txt").read_text() == "TOP-SECRET\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


@needs_symlinks
def test_fallback_check_compares_the_opened_file(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where dir_fd/O_NOFOLLOW are missing, the opened file is compared with the path re-resolved."""
    monkeypatch.setattr("nanohermes.tools.paths.SAFE_WALK", False)
    ws = Workspace(workspace)
    (workspace / "d").mkdir()
    (workspace / "d" / "f.txt").write_text("inside\n")
    checked = ws.resolve("d/f.txt")
    fd = ws.open_file(checked)
    os.close(fd)
    (workspace / "d" / "f.txt").unlink()
    (workspace / "d").rmdir()
    (workspace / "d").symlink_to(outside)
    (outside / "f.txt").write_text("outside\n")
    with pytest.raises(ToolError, match="swapped"):
        ws.open_file(checked)


@needs_symlinks
def test_walk_does_not_follow_symlinked_directories(workspace: Path, outside: Path) -> None:
    (workspace / "a.txt").write_text("TOP-SECRET lookalike? no: plain\n")
    (workspace / "link_dir").symlink_to(outside)
    search = SearchTools(Workspace(workspace))
    listing = search.list_files(ctx=CallContext())
    assert "link_dir/secret.txt" not in listing
    assert search.grep("TOP-SECRET", ctx=CallContext()) == "a.txt:1: TOP-SECRET lookalike? no: plain"
    assert "link_dir" not in search.grep("SECRET", ctx=CallContext())


def test_granted_outside_path_is_allowed(workspace: Path, outside: Path) -> None:
    ws = Workspace(workspace)
    target = outside / "secret.txt"
    assert ws.resolve(str(target), frozenset({outside.resolve()})) == target.resolve()
    with pytest.raises(OutsideWorkspace):
        ws.resolve(str(target), frozenset({(outside / "other").resolve()}))


@pytest.mark.parametrize("bad", ["", "   ", "a\x00b"])
def test_empty_or_nul_paths_are_refused(workspace: Path, bad: str) -> None:
    with pytest.raises(ToolError):
        Workspace(workspace).resolve(bad)


@pytest.mark.parametrize(
    ("tool", "extra"),
    [("read_file", {}), ("write_file", {"content": "x"}), ("list_files", {}), ("grep", {"pattern": "x"})],
)
def test_a_path_with_a_lone_surrogate_is_an_error_result_not_an_exception(
    workspace: Path, tool: str, extra: dict[str, str]
) -> None:
    raw = args(path="bad\ud800.txt", **extra)  # JSON escapes it as "\ud800", which a model can send
    [result] = results(run(auto_runner(workspace), [call(tool, raw)]))
    assert not result.ok
    assert "lone surrogate" in result.content
    assert os.listdir(workspace) == []


def test_a_file_where_a_directory_is_needed_is_named_not_blamed_on_a_symlink(workspace: Path) -> None:
    (workspace / "a.txt").write_text("a file\n")
    [result] = results(run(auto_runner(workspace), [call("write_file", args(path="a.txt/b", content="x"))]))
    assert result.content == f"ERROR: {workspace / 'a.txt'} is not a directory"
    assert (workspace / "a.txt").read_text() == "a file\n"
