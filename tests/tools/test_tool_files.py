"""read_file, write_file, edit_file: numbering, paging, caps, binary, non-UTF-8, edit errors."""

from __future__ import annotations

import difflib
import errno
import os
import stat
from pathlib import Path

import pytest

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import Cancelled, ToolError
from nanohermes.tools.base import CallContext
from nanohermes.tools.files import READ_MAX_LINE_CHARS, FileTools, apply_edit, looks_binary
from nanohermes.tools.paths import Workspace

CTX = CallContext()


@pytest.fixture
def files(workspace: Path) -> FileTools:
    return FileTools(Workspace(workspace), max_chars=20_000)


def test_read_numbers_lines_and_pages(workspace: Path, files: FileTools) -> None:
    (workspace / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    whole = files.read_file("f.txt", ctx=CTX)
    assert whole.splitlines()[0] == "     1\tline 1"
    assert whole.splitlines()[-1] == "    10\tline 10"
    page = files.read_file("f.txt", offset=4, limit=3, ctx=CTX)
    assert page.splitlines()[:3] == ["     4\tline 4", "     5\tline 5", "     6\tline 6"]
    assert "[showing lines 4-6 of 10; read on with offset=7]" in page


def test_read_errors(workspace: Path, files: FileTools) -> None:
    (workspace / "f.txt").write_text("one\n")
    (workspace / "empty.txt").write_text("")
    (workspace / "dir").mkdir()
    with pytest.raises(ToolError, match="past the end"):
        files.read_file("f.txt", offset=5, ctx=CTX)
    with pytest.raises(ToolError, match="offset must be"):
        files.read_file("f.txt", offset=0, ctx=CTX)
    with pytest.raises(ToolError, match="no such file"):
        files.read_file("missing.txt", ctx=CTX)
    with pytest.raises(ToolError, match="directory"):
        files.read_file("dir", ctx=CTX)
    assert files.read_file("empty.txt", ctx=CTX) == "empty.txt is empty"


def test_read_is_capped_in_characters_and_long_lines_are_cut(workspace: Path) -> None:
    files = FileTools(Workspace(workspace), max_chars=1_000)
    (workspace / "big.txt").write_text("".join(f"{i:05} " + "x" * 90 + "\n" for i in range(5_000)))
    (workspace / "wide.txt").write_text("y" * (READ_MAX_LINE_CHARS * 3) + "\nshort\n")
    out = files.read_file("big.txt", ctx=CTX)
    assert len(out) < 1_500
    assert "of 5000; read on with offset=" in out
    wide = FileTools(Workspace(workspace), max_chars=20_000).read_file("wide.txt", ctx=CTX)
    assert f"line cut at {READ_MAX_LINE_CHARS} characters" in wide
    assert wide.splitlines()[1] == "     2\tshort"


def test_binary_files_are_refused(workspace: Path, files: FileTools) -> None:
    (workspace / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (workspace / "noisy.bin").write_bytes(bytes([1, 2, 3, 4, 5, 6, 0x80, 0x81]) * 100)
    for name in ("img.png", "noisy.bin"):
        with pytest.raises(ToolError, match="binary file"):
            files.read_file(name, ctx=CTX)
        with pytest.raises(ToolError, match="binary file"):
            files.edit_file(name, "PNG", "JPG", ctx=CTX)
    assert looks_binary(b"plain text\twith tabs\n") is False
    assert looks_binary("caf\u00e9 \u4e2d\u6587".encode()) is False


def test_non_utf8_is_read_with_replacement_and_not_edited(workspace: Path, files: FileTools) -> None:
    latin1 = "caf\u00e9 cr\u00e8me\nsecond line\n".encode("latin-1")
    (workspace / "latin1.txt").write_bytes(latin1)
    out = files.read_file("latin1.txt", ctx=CTX)
    assert "caf\ufffd cr\ufffdme" in out
    assert "not valid UTF-8" in out
    with pytest.raises(ToolError, match="not valid UTF-8.*would not write back the same bytes"):
        files.edit_file("latin1.txt", "second", "2nd", ctx=CTX)
    assert (workspace / "latin1.txt").read_bytes() == latin1


def test_write_creates_directories_and_keeps_the_mode(workspace: Path, files: FileTools) -> None:
    assert files.write_file("a/b/c.txt", "x\ny\n", ctx=CTX) == "Created a/b/c.txt (2 lines, 4 chars)"
    assert (workspace / "a/b/c.txt").read_text() == "x\ny\n"
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert files.write_file("run.sh", "#!/bin/sh\necho hi\n", ctx=CTX).startswith("Overwrote run.sh")
    assert stat.S_IMODE(os.stat(script).st_mode) == 0o755
    assert [p.name for p in workspace.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("safe_walk", [True, False], ids=["safe-walk", "fallback"])
def test_a_write_that_fails_on_a_full_disk_removes_the_directories_it_made(
    workspace: Path, files: FileTools, monkeypatch: pytest.MonkeyPatch, safe_walk: bool
) -> None:
    (workspace / "keep").mkdir()

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("nanohermes.tools.paths.SAFE_WALK", safe_walk)
    monkeypatch.setattr("nanohermes.tools.paths.os.fsync", full_disk)
    with pytest.raises(ToolError, match="No space left on device"):
        files.write_file("keep/new/deeper/c.txt", "x\n", ctx=CTX)
    with pytest.raises(ToolError, match="No space left on device"):
        files.write_file("other/c.txt", "x\n", ctx=CTX)
    assert sorted(str(p.relative_to(workspace)) for p in workspace.rglob("*")) == ["keep"]


def test_edit_replaces_exactly_once(workspace: Path, files: FileTools) -> None:
    (workspace / "m.py").write_text("def f():\n    return 1\n")
    assert files.edit_file("m.py", "return 1", "return 2", ctx=CTX) == "Edited m.py: replaced 1 occurrence"
    assert (workspace / "m.py").read_text() == "def f():\n    return 2\n"


def test_edit_missing_old_shows_the_closest_match(workspace: Path, files: FileTools) -> None:
    (workspace / "m.py").write_text("def alpha():\n    value = compute(1, 2)\n    return value\n")
    with pytest.raises(ToolError) as info:
        files.edit_file("m.py", "value = compute(1,2)", "value = 3", ctx=CTX)
    message = str(info.value)
    assert "old text not found in m.py" in message
    assert "Closest match (it differs in whitespace only), lines 2-2" in message
    assert "value = compute(1, 2)" in message
    with pytest.raises(ToolError, match="No similar text found"):
        files.edit_file("m.py", "zzzz qqqq", "x", ctx=CTX)


def test_edit_ambiguous_old_names_the_lines(workspace: Path, files: FileTools) -> None:
    (workspace / "t.txt").write_text("a = 1\nb = 2\na = 1\n")
    with pytest.raises(ToolError, match=r"occurs 2 times in t.txt \(lines 1, 3\).*replace_all=true"):
        files.edit_file("t.txt", "a = 1", "a = 9", ctx=CTX)
    assert files.edit_file("t.txt", "a = 1", "a = 9", replace_all=True, ctx=CTX).endswith("2 occurrences")
    assert (workspace / "t.txt").read_text() == "a = 9\nb = 2\na = 9\n"


def test_edit_input_errors() -> None:
    with pytest.raises(ToolError, match="old is empty"):
        apply_edit("abc", "", "x", False, "f")
    with pytest.raises(ToolError, match="the same"):
        apply_edit("abc", "b", "b", False, "f")


def test_edit_keeps_crlf_line_endings(workspace: Path, files: FileTools) -> None:
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    files.edit_file("w.txt", "one\ntwo", "uno\ndos", ctx=CTX)
    assert (workspace / "w.txt").read_bytes() == b"uno\r\ndos\r\nthree\r\n"


def test_edit_of_an_all_crlf_file_writes_the_new_lines_in_crlf(workspace: Path, files: FileTools) -> None:
    (workspace / "w.txt").write_bytes(b"x = 1\r\ny = 2\r\n")
    files.edit_file("w.txt", "x = 1", "x = 1\nz = 3", ctx=CTX)  # one line becomes two
    assert (workspace / "w.txt").read_bytes() == b"x = 1\r\nz = 3\r\ny = 2\r\n"  # never mixed endings


def test_edit_of_a_mixed_file_keeps_new_as_given(workspace: Path, files: FileTools) -> None:
    (workspace / "m.txt").write_bytes(b"a\r\nb\nc\n")
    files.edit_file("m.txt", "b", "b\nb2", ctx=CTX)
    assert (workspace / "m.txt").read_bytes() == b"a\r\nb\nb2\nc\n"


def test_a_file_whose_name_is_near_the_length_limit_is_written_and_edited(
    workspace: Path, files: FileTools
) -> None:
    name = "n" * 250  # the longest names (255 bytes) are valid: its temp file's name must fit too
    assert files.write_file(name, "hello\n", ctx=CTX).startswith("Created")
    files.edit_file(name, "hello", "bye", ctx=CTX)
    assert (workspace / name).read_text() == "bye\n"
    assert os.listdir(workspace) == [name]


def test_text_with_a_lone_surrogate_is_a_clear_error_and_nothing_is_written(
    workspace: Path, files: FileTools
) -> None:
    (workspace / "a.txt").write_text("hello\n")
    with pytest.raises(ToolError, match="lone surrogate"):
        files.write_file("new.txt", "x\ud800y", ctx=CTX)
    with pytest.raises(ToolError, match="lone surrogate"):
        files.edit_file("a.txt", "hello", "\ud800", ctx=CTX)
    assert sorted(os.listdir(workspace)) == ["a.txt"]
    assert (workspace / "a.txt").read_text() == "hello\n"


def test_a_long_utf8_line_cut_mid_character_is_not_called_invalid(workspace: Path, files: FileTools) -> None:
    (workspace / "cjk.txt").write_text("中" * 30_000 + "\nsecond\n")  # 90 KB: cut at 64 KB, mid-character
    shown = files.read_file("cjk.txt", ctx=CTX)
    assert "not valid UTF-8" not in shown
    assert "\ufffd" not in shown
    assert shown.endswith("     2\tsecond")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_write_over_a_fifo_or_a_socket_is_refused_and_it_stays(workspace: Path, files: FileTools) -> None:
    import socket

    os.mkfifo(workspace / "fifo")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(workspace / "sock"))  # a program's socket: replacing it cuts its clients off
    try:
        for name, kind in (("fifo", "a FIFO"), ("sock", "a socket")):
            with pytest.raises(ToolError, match=f"not a regular file \\({kind}\\)"):
                files.write_file(name, "data\n", ctx=CTX)
        assert stat.S_ISFIFO(os.lstat(workspace / "fifo").st_mode)
        assert stat.S_ISSOCK(os.lstat(workspace / "sock").st_mode)
        assert sorted(os.listdir(workspace)) == ["fifo", "sock"]
    finally:
        listener.close()


def test_an_edit_that_would_grow_the_file_past_the_limit_is_refused(
    workspace: Path, files: FileTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 7 MB file, replace_all of one character by 1,000: 7 GB written, 13 GB of memory."""
    monkeypatch.setattr("nanohermes.tools.files.EDIT_MAX_BYTES", 1024 * 1024)
    (workspace / "x.txt").write_text("x" * 1000 + "\n")
    with pytest.raises(ToolError, match=r"would make x.txt over 1 MB \(1,100,001 characters\); not edited"):
        files.edit_file("x.txt", "x", "y" * 1100, replace_all=True, ctx=CTX)
    assert (workspace / "x.txt").read_text() == "x" * 1000 + "\n"


def test_the_closest_match_hint_stops_after_its_work_budget(
    workspace: Path, files: FileTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows of similar text all pass the quick checks: 20,000 full comparisons ran over 10 minutes."""
    compared: list[int] = []
    ratio = difflib.SequenceMatcher.ratio
    monkeypatch.setattr("nanohermes.tools.files.CLOSEST_WORK", 10 * 400 * 400)
    monkeypatch.setattr(difflib.SequenceMatcher, "ratio", lambda self: compared.append(1) or ratio(self))
    (workspace / "s.txt").write_text("".join(("ab " * 200)[i % 3 :][:400] + "\n" for i in range(2000)))
    with pytest.raises(ToolError, match="old text not found"):
        files.edit_file("s.txt", "ba " * 130 + "zz", "x", ctx=CTX)
    assert 0 < len(compared) <= 11


def test_reading_far_into_a_huge_file_stops_on_ctrl_c(workspace: Path, files: FileTools) -> None:
    with open(workspace / "sparse.txt", "wb") as handle:  # 1 GB, nearly all one line of NUL bytes
        handle.write(b"text\n" * 10_000)
        handle.truncate(1024**3)
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(Cancelled):
        files.read_file("sparse.txt", offset=20_000, ctx=CallContext(cancel))


def test_a_name_too_long_is_a_tool_error(files: FileTools) -> None:
    with pytest.raises(ToolError, match="File name too long"):
        files.write_file("x" * 300, "data\n", ctx=CTX)


def test_write_and_edit_results_quote_a_name_holding_a_newline(workspace: Path, files: FileTools) -> None:
    assert files.write_file("a\nb.txt", "one\n", ctx=CTX) == 'Created "a\\nb.txt" (1 line, 4 chars)'
    assert files.edit_file("a\nb.txt", "one", "two", ctx=CTX) == 'Edited "a\\nb.txt": replaced 1 occurrence'
