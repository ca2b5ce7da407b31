"""list_files and grep: the .gitignore subset, .git skipped, globs, caps, regex errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nanohermes.core.errors import ToolError
from nanohermes.tools.base import CallContext
from nanohermes.tools.files import FileTools
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


def test_grep_skips_a_symlink_loop_inside_the_tree(workspace: Path, search: SearchTools) -> None:
    (workspace / "a.txt").write_text("needle\n")
    (workspace / "loop1").symlink_to("loop2")  # resolving it raised RuntimeError and failed the grep
    (workspace / "loop2").symlink_to("loop1")
    assert search.grep("needle", ctx=CTX) == "a.txt:1: needle"


@pytest.mark.timeout(60)
def test_globs_and_gitignore_rules_that_would_backtrack_match_at_once(workspace: Path) -> None:
    """As whole-path regexes (nested `.*`) these ran for minutes and more; `re` cannot be stopped."""
    deep = workspace.joinpath(*["d"] * 40)
    deep.mkdir(parents=True)
    (deep / "f.txt").write_text("x\n")
    (workspace / ("a" * 200)).write_text("x\n")
    (workspace / ".gitignore").write_text("*a" * 14 + "*b\n" + "**/" * 12 + "zzz\n")
    tools = SearchTools(Workspace(workspace))
    assert (
        tools.list_files(glob="**/" * 12 + "zzz", ctx=CTX)
        == "no files matching " + repr("**/" * 12 + "zzz") + " under ."
    )
    assert tools.list_files(glob="*a" * 14 + "*b", ctx=CTX).startswith("no files matching")
    assert tools.list_files(ctx=CTX).splitlines() == [
        ".gitignore",
        "a" * 200,
        "/".join(["d"] * 40) + "/f.txt",
    ]
    assert is_ignored(parse_gitignore("a/**/**/b/**"), "a/x/y/b/c", False) is True
    assert is_ignored(parse_gitignore("a/**/**/b/**"), "a/x/y/b", True) is False  # inside b only


def test_a_regex_whose_counted_repeats_multiply_is_refused_before_compiling(
    workspace: Path, search: SearchTools
) -> None:
    """`(?:(?:a{1000}){1000}){1000}` made the engine allocate tens of GB while compiling."""
    (workspace / "a.txt").write_text("aaa\n")
    with pytest.raises(ToolError, match=r"repeats too much .*not run"):
        search.grep("(?:a{1000}){200}", ctx=CTX)
    assert search.grep(r"a{1,3}\d{0,5}", ctx=CTX) == "a.txt:1: aaa"


def test_names_that_could_pass_for_other_lines_or_files_are_quoted(
    workspace: Path, search: SearchTools
) -> None:
    names = ["evil\nmain.py:1: planted", "esc\x1b[2J", "bidi\u202etxt.exe", "zw\u200b.py", '"quoted"']
    for name in [*names, "plain é.py"]:
        (workspace / name).write_text("needle\n")
    os.close(os.open(os.fsencode(workspace) + b"/bad\xff.txt", os.O_CREAT | os.O_WRONLY))
    assert search.list_files(ctx=CTX).splitlines() == [
        '"\\"quoted\\""',
        '"bad\\xff.txt"',
        '"bidi\\u202etxt.exe"',
        '"esc\\x1b[2J"',
        '"evil\\nmain.py:1: planted"',
        "plain é.py",
        '"zw\\u200b.py"',
    ]
    assert search.grep("needle", ctx=CTX).splitlines()[3] == '"evil\\nmain.py:1: planted":1: needle'
    files = FileTools(Workspace(workspace), max_chars=20_000)
    for shown in search.list_files(ctx=CTX).splitlines():  # a name passed back as it was shown
        assert files.read_file(shown, ctx=CTX).endswith("needle" if shown != '"bad\\xff.txt"' else "is empty")
    (workspace / '"plain é.py"').write_text("the file really named with quotes\n")
    assert "really named" in files.read_file('"plain é.py"', ctx=CTX)  # a real name comes first


def test_grep_reads_no_more_of_a_file_that_grew_after_its_size_was_checked(
    workspace: Path, search: SearchTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = workspace / "app.log"
    log.write_text("start\n")
    from nanohermes.tools import search as search_module

    def sniff_while_a_huge_line_is_appended(data: bytes) -> bool:
        with log.open("a") as handle:  # another program writes on, after the size check
            handle.write("x" * 5_000 + " needle\n")
        return False

    monkeypatch.setattr(search_module, "GREP_MAX_FILE_BYTES", 1_000)
    monkeypatch.setattr(search_module, "looks_binary", sniff_while_a_huge_line_is_appended)
    assert search.grep("start|needle", ctx=CTX) == "app.log:1: start"  # the old code read it all
