"""list_files and grep: the .gitignore subset, .git skipped, globs, caps, regex errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nanohermes.errors import ToolError
from nanohermes.tools.base import CallContext
from nanohermes.tools.paths import Workspace
from nanohermes.tools.search import (
    GREP_MAX_MATCHES,
    LIST_MAX_ENTRIES,
    SearchTools,
    is_ignored,
    parse_gitignore,
)

CTX = CallContext()


def tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def search(workspace: Path) -> SearchTools:
    return SearchTools(Workspace(workspace))


@pytest.mark.parametrize(
    ("patterns", "path", "is_dir", "ignored"),
    [
        ("*.log", "a.log", False, True),
        ("*.log", "deep/er/a.log", False, True),
        ("*.log\n!keep.log", "keep.log", False, False),
        ("build/", "build", True, True),
        ("build/", "build", False, False),  # dir-only pattern, a file named build stays
        ("/top.txt", "top.txt", False, True),
        ("/top.txt", "sub/top.txt", False, False),  # anchored
        ("doc/*.md", "doc/a.md", False, True),
        ("doc/*.md", "x/doc/a.md", False, False),  # inner slash anchors too
        ("**/cache", "a/b/cache", True, True),
        ("logs/**", "logs/x/y.txt", False, True),
        ("a/**/z", "a/z", False, True),
        ("a/**/z", "a/b/c/z", False, True),
        ("file?.txt", "file1.txt", False, True),
        ("file?.txt", "file10.txt", False, False),
        ("[abc].py", "b.py", False, True),
        ("[!abc].py", "b.py", False, False),
        ("# comment\n\n  \n", "# comment", False, False),
        ("\\#hash", "#hash", False, True),
        ("\\!bang", "!bang", False, True),
        ("trailing   ", "trailing", False, True),
    ],
)
def test_gitignore_subset(patterns: str, path: str, is_dir: bool, ignored: bool) -> None:
    assert is_ignored(parse_gitignore(patterns), path, is_dir) is ignored


def test_list_respects_gitignore_and_skips_git(workspace: Path, search: SearchTools) -> None:
    tree(
        workspace,
        {
            ".gitignore": "*.log\nbuild/\n!important.log\n",
            ".git/config": "[core]\n",
            ".git/objects/ab": "blob",
            "src/app.py": "print('hi')\n",
            "src/debug.log": "noise\n",
            "important.log": "keep me\n",
            "build/out.bin": "x",
            "src/sub/.gitignore": "generated.py\n",
            "src/sub/generated.py": "x = 1\n",
            "src/sub/hand.py": "y = 2\n",
            "generated.py": "not ignored at the root\n",
        },
    )
    listing = search.list_files(ctx=CTX).splitlines()
    assert listing == [
        ".gitignore",
        "generated.py",
        "important.log",
        "src/app.py",
        "src/sub/.gitignore",
        "src/sub/hand.py",
    ]
    assert search.list_files("src/sub", ctx=CTX).splitlines() == ["src/sub/.gitignore", "src/sub/hand.py"]
    assert search.list_files(glob="*.py", ctx=CTX).splitlines() == [
        "generated.py",
        "src/app.py",
        "src/sub/hand.py",
    ]
    assert search.list_files(glob="src/**/*.py", ctx=CTX).splitlines() == ["src/app.py", "src/sub/hand.py"]
    assert search.list_files(glob="*.rs", ctx=CTX) == "no files matching '*.rs' under ."


def test_list_errors_and_cap(workspace: Path, search: SearchTools) -> None:
    (workspace / "f.txt").write_text("x")
    with pytest.raises(ToolError, match="not a directory"):
        search.list_files("f.txt", ctx=CTX)
    with pytest.raises(ToolError, match="no such directory"):
        search.list_files("nope", ctx=CTX)
    many = workspace / "many"
    many.mkdir()
    for i in range(LIST_MAX_ENTRIES + 5):
        (many / f"{i:05}.txt").write_text("")
    out = search.list_files("many", ctx=CTX).splitlines()
    assert len(out) == LIST_MAX_ENTRIES + 1
    assert out[-1] == "[… 5 more files; narrow it with path or glob]"


def test_grep_finds_lines_and_respects_gitignore(workspace: Path, search: SearchTools) -> None:
    tree(
        workspace,
        {
            ".gitignore": "vendor/\n",
            "a.py": "import os\nTODO: fix\n",
            "b/c.txt": "nothing\ntodo lower\nTODO again\n",
            "vendor/lib.py": "TODO vendored\n",
        },
    )
    (workspace / "blob.bin").write_bytes(b"TODO\x00\x01\x02")
    assert search.grep("TODO", ctx=CTX).splitlines() == ["a.py:2: TODO: fix", "b/c.txt:3: TODO again"]
    assert search.grep("(?i)todo", path="b", ctx=CTX).splitlines() == [
        "b/c.txt:2: todo lower",
        "b/c.txt:3: TODO again",
    ]
    assert search.grep("TODO", glob="*.py", ctx=CTX) == "a.py:2: TODO: fix"
    assert search.grep("import", path="a.py", ctx=CTX) == "a.py:1: import os"
    assert search.grep("absent", ctx=CTX) == "no matches for 'absent'"


def test_grep_cap_and_regex_errors(workspace: Path, search: SearchTools) -> None:
    (workspace / "many.txt").write_text("hit\n" * (GREP_MAX_MATCHES + 7))
    out = search.grep("hit", ctx=CTX).splitlines()
    assert len(out) == GREP_MAX_MATCHES + 1
    assert out[-1] == "[… 7 more matches not shown; narrow the pattern, path or glob]"
    with pytest.raises(ToolError) as info:
        search.grep("([unclosed", ctx=CTX)
    message = info.value.one_line()
    assert message.startswith("invalid regular expression '([unclosed':")
    assert "\n" not in message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.timeout(30)
@pytest.mark.parametrize("where", ["", "sub/"])
def test_a_gitignore_that_is_a_fifo_or_a_link_to_a_device_cannot_block_the_walk(
    search: SearchTools, workspace: Path, where: str
) -> None:
    """Opening a FIFO waits for a writer, /dev/zero never ends: both would hang list_files and grep.
    Like git, only a regular .gitignore counts (a symlinked one is not followed)."""
    tree(workspace, {"sub/deep/a.txt": "needle", "sub/b.log": "needle"})
    os.mkfifo(workspace / f"{where}.gitignore")
    (workspace / "sub" / "deep" / ".gitignore").symlink_to("/dev/zero")
    outside = workspace.parent / "rules"
    outside.write_text("*.txt\n")
    (workspace / "sub" / ".gitignore" if not where else workspace / ".gitignore").symlink_to(outside)
    for path in (".", "sub", "sub/deep"):
        assert "a.txt" in search.list_files(path, ctx=CTX)
    assert "sub/b.log" in search.list_files(".", ctx=CTX)
    assert "sub/deep/a.txt:1: needle" in search.grep("needle", "sub", ctx=CTX)


def test_a_directory_chain_too_deep_to_walk_is_named_and_the_rest_is_still_searched(
    workspace: Path,
) -> None:
    fd = os.open(workspace, os.O_RDONLY)
    for _ in range(700):  # a recursive walk this deep exhausts the stack (RecursionError)
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)
    (workspace / "top.txt").write_text("needle\n")
    tools = SearchTools(Workspace(workspace))
    listed = tools.list_files(ctx=CTX).splitlines()
    assert listed[0] == "top.txt"
    assert listed[1].startswith("[not entered, more than ")
    assert "directories deep: d/d/" in listed[1]
    found = tools.grep("needle", ctx=CTX).splitlines()
    assert found[0] == "top.txt:1: needle"
    assert found[1].startswith("[not entered")


def test_files_just_within_the_depth_limit_are_found(workspace: Path) -> None:
    from nanohermes.tools.search import MAX_DEPTH

    deep = workspace.joinpath(*["d"] * MAX_DEPTH)
    deep.mkdir(parents=True)
    (deep / "deep.txt").write_text("needle\n")
    tools = SearchTools(Workspace(workspace))
    assert tools.list_files(ctx=CTX) == "/".join(["d"] * MAX_DEPTH) + "/deep.txt"
    assert tools.grep("needle", ctx=CTX).endswith("deep.txt:1: needle")


def test_grep_says_which_files_were_too_big_to_search(workspace: Path) -> None:
    from nanohermes.tools.search import GREP_MAX_FILE_BYTES

    filler = b"a line of a log\n"
    (workspace / "big.log").write_bytes(filler * (GREP_MAX_FILE_BYTES // len(filler)) + b"needle\n")
    (workspace / "small.txt").write_text("nothing here\n")
    tools = SearchTools(Workspace(workspace))
    for path in (".", "big.log"):
        found = tools.grep("needle", path, ctx=CTX).splitlines()
        assert found[0] == "no matches for 'needle'"
        assert found[1].startswith("[not searched, larger than 16 MB: big.log;")
