"""The key of the project a workspace belongs to (SPEC §3.9): its `origin` remote normalised so every
clone agrees, else the path of the git top level or workspace. Only `.git/config` is read: a hostile
repository cannot run code through this."""

from __future__ import annotations

import configparser
import hashlib
import os
import re
from pathlib import Path

from nanohermes.core.fileio import read_regular

MAX_CONFIG_BYTES = 1 << 20
MAX_KEY_CHARS = 200
"""A longer key (a hostile remote URL) is cut and ends with a digest of the whole."""
# The userinfo runs to the LAST `@` before the path: a password may hold an unencoded `@`.
_SCP_LIKE = re.compile(r"^(?:[^/\s]*@)?([^:/\s@]+):(?!//)(.+)$")  # git@host:owner/repo.git
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://(?:[^/?#]*@)?([^/:?#@]+)(?::\d+)?(/[^?#]*)?", re.IGNORECASE)
# What memory.json or a terminal would not give back as is: controls, bidi overrides, lone
# surrogates (a path's non-UTF-8 bytes); and whitespace at either end (a loaded key is stripped).
_UNSTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_EDGE_SPACE = re.compile(r"^\s+|\s+$")


def project_key(workspace: Path | str) -> str:
    """The project key of `workspace` (never empty), each character that a reload of memory.json
    would change (or a terminal act on) escaped, cut to MAX_KEY_CHARS: otherwise a project's
    memories vanish after a restart."""
    root = Path(os.path.abspath(workspace))
    top = git_top_level(root)
    remote = origin_url(top) if top is not None else None
    key = normalise_remote(remote, top) if remote and top else None
    key = _UNSTABLE.sub(_escaped, key or str(top or root))
    key = _EDGE_SPACE.sub(lambda found: "".join(_escaped(char) for char in found.group()), key)
    if len(key) <= MAX_KEY_CHARS:
        return key
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    return f"{key[: MAX_KEY_CHARS - len(digest) - 1]}#{digest}"


def _escaped(found: re.Match[str] | str) -> str:
    code = ord(found if isinstance(found, str) else found.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, decoded with surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def git_top_level(start: Path) -> Path | None:
    """The nearest directory at or above `start` holding `.git` (a directory or a file)."""
    for directory in (start, *start.parents):
        if os.path.lexists(directory / ".git"):
            return directory
    return None


def git_dir(top: Path) -> Path | None:
    """The git directory of the repository at `top` (a worktree's common one), or None."""
    dot_git = top / ".git"
    if dot_git.is_dir():
        return dot_git
    text = _read_small(dot_git)  # a worktree or submodule: "gitdir: <path>"
    if text is None or not text.startswith("gitdir:"):
        return None
    directory = Path(text[len("gitdir:") :].strip())
    directory = directory if directory.is_absolute() else top / directory
    common = _read_small(directory / "commondir")  # a worktree's config lives in the common dir
    if common is not None and common.strip():
        shared = Path(common.strip())
        directory = shared if shared.is_absolute() else directory / shared
    return directory


def _read_small(path: Path) -> str | None:
    """A small regular file's text (bytes that are not UTF-8 kept apart, so two such remotes never
    become one key), else None."""
    try:
        data, size = read_regular(path, MAX_CONFIG_BYTES)
    except (OSError, ValueError):  # ValueError: a NUL in a `gitdir:` path
        return None
    return data.decode("utf-8", errors="surrogateescape") if 0 < size <= MAX_CONFIG_BYTES else None


def origin_url(top: Path) -> str | None:
    """`remote.origin.url` from the repository's config, or None."""
    directory = git_dir(top)
    text = _read_small(directory / "config") if directory is not None else None
    if text is None:
        return None
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    origin = [section for section in parser.sections() if re.fullmatch(r'remote\s+"origin"', section.strip())]
    return (parser.get(origin[0], "url", fallback="").strip().strip('"') or None) if origin else None


def normalise_remote(url: str, top: Path) -> str | None:
    """`host/path` in lower case, without credentials, port, scheme or `.git`; a local remote's path."""
    url = url.strip()
    found = _URL.match(url)
    if found is not None and not url.lower().startswith("file:"):
        return _join(found.group(1), found.group(2) or "")
    scp = _SCP_LIKE.match(url)
    if scp is not None and not re.match(r"^[A-Za-z]:[\\/]", url):  # not C:\repo
        return _join(scp.group(1), scp.group(2))
    local = url[len("file://") :] if url.lower().startswith("file://") else url
    if not local:
        return None
    path = Path(local) if os.path.isabs(local) else top / local
    return str(Path(os.path.normpath(path))).removesuffix("/.git").removesuffix(".git") or None


def _join(host: str, path: str) -> str | None:
    clean = path.strip("/").removesuffix(".git").strip("/")
    return f"{host.lower()}/{clean.lower()}" if host and clean else None
