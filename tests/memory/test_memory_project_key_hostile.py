"""Project keys (SPEC §3.9) from odd workspaces and hostile `.git/config` files: no credential in the
key, no two repositories sharing one, the same key after a restart, and no hang at start-up."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from nanohermes.memory import Kind, MemoryStore, project_key
from nanohermes.memory.project import normalise_remote


def _repo(path: Path, config: bytes) -> Path:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_bytes(config)
    return path


def _origin(url: bytes) -> bytes:
    return b'[core]\n\tbare = false\n[remote "origin"]\n\turl = ' + url + b"\n"


def _odd_dir(parent: Path, name: bytes) -> Path:
    path = parent / os.fsdecode(name)
    try:
        path.mkdir()
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses the name")
    return path


@pytest.mark.parametrize("name", [b"proj ", b"proj\xff"])
def test_a_project_in_an_odd_directory_keeps_its_memories_after_a_restart(
    name: bytes, tmp_path: Path
) -> None:
    odd = _odd_dir(tmp_path, name)
    plain = tmp_path / "proj"
    plain.mkdir()
    memory = tmp_path / "mem"
    saved = MemoryStore(memory, project=project_key(odd))
    assert saved.remember(Kind.FACT, "the staging host is called alpha", source="tool", scope="project")
    reopened = MemoryStore(memory, project=project_key(odd))  # memory.json read back from disk
    assert [e.text for e in reopened.visible()] == ["the staging host is called alpha"]
    assert MemoryStore(memory, project=project_key(plain)).visible() == []  # another directory


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("https://user:p@ss@example.org/team/repo.git", "example.org/team/repo"),
        ("https://ghp_tok@en@github.com/me/tool", "github.com/me/tool"),
        ("deploy:hunter@2@example.org:team/repo.git", "example.org/team/repo"),
    ],
)
def test_a_password_holding_an_at_sign_leaves_nothing_in_the_key(url: str, key: str, tmp_path: Path) -> None:
    assert normalise_remote(url, tmp_path) == key
    assert project_key(_repo(tmp_path / "r", _origin(url.encode()))) == key


def test_remotes_differing_only_in_bytes_that_are_not_utf8_get_different_keys(tmp_path: Path) -> None:
    first = project_key(_repo(tmp_path / "a", _origin(b"https://example.org/team/r\xff")))
    second = project_key(_repo(tmp_path / "b", _origin(b"https://example.org/team/r\xfe")))
    clone = project_key(_repo(tmp_path / "c", _origin(b"https://example.org/team/r\xff")))
    assert first != second
    assert first == clone
    assert first.isprintable()


def test_an_enormous_remote_url_gives_a_short_key_that_clones_share(tmp_path: Path) -> None:
    long_path = b"https://example.org/team/" + b"x" * 900_000
    first = project_key(_repo(tmp_path / "a", _origin(long_path + b"1")))
    clone = project_key(_repo(tmp_path / "b", _origin(long_path + b"1.git")))
    other = project_key(_repo(tmp_path / "c", _origin(long_path + b"2")))
    assert len(first) <= 200  # MAX_KEY_CHARS: it is stored in every project memory
    assert first.startswith("example.org/team/xxx")
    assert first == clone
    assert first != other


def test_control_characters_in_a_remote_or_a_path_are_escaped_in_the_key(tmp_path: Path) -> None:
    remote = project_key(_repo(tmp_path / "r", _origin(b"https://example.org/team/x\x1b]0;pwned\x07\x1b[2J")))
    assert remote == "example.org/team/x\\x1b]0;pwned\\x07\\x1b[2j"
    path = project_key(_odd_dir(tmp_path, b"odd\x1b[2Jname\nthis project"))
    assert "\x1b" not in path
    assert "\n" not in path
    assert path.endswith("odd\\x1b[2Jname\\x0athis project")


class _Blocked(Exception):
    """Not an OSError: the code under test catches those."""


@contextmanager
def _fails_instead_of_hanging(seconds: int) -> Iterator[None]:
    """A guard, not a timing check: the old code blocked for ever in a read of /proc/kmsg."""

    def stop(signum: int, frame: object) -> None:
        raise _Blocked("project_key blocked reading .git/config")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _kmsg_readable() -> bool:
    try:
        fd = os.open("/proc/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    os.close(fd)
    return True


@pytest.mark.skipif(
    not hasattr(signal, "SIGALRM") or not _kmsg_readable(), reason="needs a readable /proc/kmsg"
)
@pytest.mark.parametrize("target", [".git/config", ".git"])
def test_git_files_linked_to_a_blocking_proc_file_do_not_hang_start_up(target: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    if target == ".git":
        (repo / ".git").rmdir()
    (repo / target).symlink_to("/proc/kmsg")
    with _fails_instead_of_hanging(20):
        assert project_key(repo) == str(repo)
