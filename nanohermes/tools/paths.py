"""Workspace confinement: a tool path is resolved with every symlink followed, and refused when it
lands outside unless granted. A symlink swapped in after that check is caught by opening the resolved
path one component at a time from `/` with `O_NOFOLLOW`, each directory relative to its parent's
descriptor (without `dir_fd`, on Windows, the opened file is compared with the path re-resolved)."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from nanohermes.core.errors import ToolError
from nanohermes.core.fileio import write_all

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
SAFE_WALK = bool(_NOFOLLOW and _DIRECTORY) and os.open in os.supports_dir_fd


class OutsideWorkspace(ToolError):
    def __init__(self, given: str, resolved: Path, root: Path) -> None:
        super().__init__(
            f"path {given!r} resolves to {resolved}, outside the workspace {root}; refused",
            hint="use a path inside the workspace",
        )
        self.resolved = resolved


class Workspace:
    """The directory tools may touch, and safe ways to open things in it."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).expanduser().resolve()

    def resolve(self, path: str, granted: frozenset[Path] = frozenset()) -> Path:
        """The absolute, symlink-free path `path` names. Raises OutsideWorkspace or ToolError."""
        if not path.strip():
            raise ToolError("path is empty")
        path = self._as_named(path)
        if "\x00" in path:
            raise ToolError("path contains a NUL byte")
        try:
            os.fsencode(path)  # a lone surrogate ("\ud800" in the JSON) names no file: realpath raises
        except UnicodeError:
            raise ToolError(f"path {path!r} is not valid text (a lone surrogate)") from None
        try:
            candidate = self.root / Path(path.strip()).expanduser()  # an absolute one replaces the root
            resolved = candidate.resolve(strict=False)
        except (RuntimeError, KeyError, OSError) as err:  # `~nosuchuser/x`, no home, a symlink loop
            raise ToolError(
                f"cannot resolve {path!r}: {err}", hint="give a path inside the workspace"
            ) from None
        if not self.allows(resolved, granted):
            raise OutsideWorkspace(path, resolved, self.root)
        return resolved

    def _as_named(self, path: str) -> str:
        """`path`, or the name `shown_path` quoted as `path`: the model passes back names as shown."""
        plain = unquoted_path(path.strip())
        if plain is None or os.path.lexists(os.path.join(self.root, path.strip())):
            return path
        return plain if os.path.lexists(os.path.join(self.root, plain)) else path

    def allows(self, resolved: Path, granted: frozenset[Path] = frozenset()) -> bool:
        return any(resolved.is_relative_to(allowed) for allowed in (self.root, *granted))

    def relative(self, resolved: Path) -> str:
        if resolved.is_relative_to(self.root):
            return resolved.relative_to(self.root).as_posix()  # "." for the root
        return str(resolved)

    def shown(self, resolved: Path) -> str:
        return shown_path(self.relative(resolved))

    def open_file(self, resolved: Path) -> int:
        """A raw fd of the existing regular file `resolved`, refusing any symlink met on the way."""
        if not SAFE_WALK:
            fd = open_regular(str(resolved), None, resolved)
            _verify_same(fd, resolved)
            return fd
        with self.dir_fd(resolved.parent) as parent:
            return open_regular(resolved.name, parent, resolved)

    @contextlib.contextmanager
    def dir_fd(self, directory: Path, *, made: list[Path] | None = None) -> Iterator[int]:
        """`directory` opened from `/` with O_NOFOLLOW at every step; with `made`, missing directories
        are created and appended to it. Needs SAFE_WALK."""
        fd = os.open(directory.anchor or "/", os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        try:
            for depth, part in enumerate(directory.parts[1:], start=2):
                child = step_into(fd, part, Path(*directory.parts[:depth]), made)
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def replace_into(self, resolved: Path, data: bytes) -> None:
        """Write atomically (temp file + rename in the safely opened dir). Directories made for the file
        are removed again when the write fails (a full disk)."""
        made: list[Path] = []
        try:
            if SAFE_WALK:
                with self.dir_fd(resolved.parent, made=made) as parent:
                    _write_new(resolved, data, parent)
            else:
                _make_parent(resolved, made)
                _write_new(resolved, data, None)
        except BaseException:
            for directory in reversed(made):  # deepest first, each only while empty
                with contextlib.suppress(OSError):
                    if SAFE_WALK:
                        with self.dir_fd(directory.parent) as fd:
                            os.rmdir(directory.name, dir_fd=fd)
                    else:
                        os.rmdir(directory)
            raise


def step_into(fd: int, part: str, here: Path, made: list[Path] | None = None) -> int:
    """Open the directory `part` (the path `here`) inside `fd`; with `made`, create it when missing."""
    flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
    try:
        if made is not None and _lstat_mode(part, fd) is None:
            with contextlib.suppress(FileExistsError):  # made meanwhile by someone else: theirs, kept
                os.mkdir(part, 0o777, dir_fd=fd)
                made.append(here)
        return os.open(part, flags, dir_fd=fd)
    except OSError as err:
        raise _translate(err, here) from None


def open_regular(name: str, parent: int | None, path: Path) -> int:
    """A raw read-only fd of the regular file `name` (in the directory fd `parent`), never through a
    symlink. A FIFO, socket or device is refused before it is opened (opening some has effects); one
    swapped in after that check cannot block the open (O_NONBLOCK). `path` names it in errors."""
    flags = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _BINARY | _NONBLOCK
    try:
        mode = _lstat_mode(name, parent)
        if mode is not None and is_special(mode):
            raise _not_regular(path, mode)
        fd = os.open(name, flags, dir_fd=parent)
    except OSError as err:
        raise _translate(err, path) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _not_regular(path, mode)
    if _NONBLOCK:
        os.set_blocking(fd, True)
    return fd


def _lstat_mode(name: str, parent: int | None) -> int | None:
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None


def _write_new(resolved: Path, data: bytes, parent: int | None) -> None:
    """Write a temp file beside `resolved` and rename it over; an existing file keeps its mode."""
    stem = os.fsencode(resolved.name)[:128].decode("utf-8", "ignore") or "file"  # within NAME_MAX
    temp = f".{stem}.nanohermes-{os.getpid()}-{id(data):x}.tmp"
    if parent is None:
        temp, target = str(resolved.parent / temp), str(resolved)
    else:
        target = resolved.name
    try:
        old_mode = _lstat_mode(target, parent)
        if old_mode is not None and stat.S_ISLNK(old_mode):
            raise ToolError(f"{resolved} became a symlink after it was checked; refused")
        if old_mode is not None and not stat.S_ISREG(old_mode):  # a FIFO or socket a program listens on
            raise _not_regular(resolved, old_mode)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | _BINARY
        fd = os.open(temp, flags, 0o666, dir_fd=parent)
        try:
            write_all(fd, data)
            os.fsync(fd)
            if old_mode is not None and hasattr(os, "fchmod"):
                os.fchmod(fd, stat.S_IMODE(old_mode))
        finally:
            os.close(fd)
        os.replace(temp, target, src_dir_fd=parent, dst_dir_fd=parent)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=parent)
        raise _translate(err, resolved) from None


def _make_parent(resolved: Path, made: list[Path]) -> None:
    """Without SAFE_WALK: create the parent, and refuse it if it now resolves elsewhere."""
    missing = [d for d in (resolved.parent, *resolved.parent.parents) if not d.exists()]
    made.extend(reversed(missing))  # outermost first, as the safe walk creates them
    try:
        resolved.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _translate(err, resolved.parent) from None
    if resolved.parent.resolve() != resolved.parent:
        raise ToolError(f"{resolved.parent} changed after it was checked (a symlink swapped in?); refused")


def _verify_same(fd: int, resolved: Path) -> None:
    """Without SAFE_WALK: the open file is the one the path names now, and still inside."""
    try:
        again = resolved.resolve(strict=True)
        same = again == resolved and os.path.samestat(os.fstat(fd), os.stat(again))
    except OSError:
        same = False
    if not same:
        os.close(fd)
        raise ToolError(f"{resolved} changed while it was being opened (a symlink was swapped in); refused")


_UNSAFE = "\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff"
_NEEDS_QUOTES = re.compile(f'[{_UNSAFE}]|^"')
_QUOTED = re.compile(f'[{_UNSAFE}"\\\\]')
_NAMED_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def shown_path(rel: str) -> str:
    """`rel` as tool output shows it. A name with a newline, escape, bidi override, invisible character
    or non-UTF-8 byte could pass for another line or file: it is quoted and escaped as git's
    core.quotePath does (`\\n`, `\\x1b`, `\\u202e`, `\\xff`)."""
    if not _NEEDS_QUOTES.search(rel):
        return rel
    return '"' + _QUOTED.sub(_escaped, rel) + '"'


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for a byte that is not UTF-8
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"  # so `\\x80`-`\\xff` are bytes


_UNESCAPE = re.compile(r'\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|([ntr"\\]))')
_NAMED_UNESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def unquoted_path(shown: str) -> str | None:
    """The name `shown_path` showed as `shown`, or None when `shown` is not such a quoted name."""
    body = shown[1:-1]
    if len(shown) < 2 or shown[0] != '"' or shown[-1] != '"' or re.search(r'["\\]', _UNESCAPE.sub("", body)):
        return None
    return _UNESCAPE.sub(_unescaped, body)


def _unescaped(match: re.Match[str]) -> str:
    byte, code, named = match.groups()
    if byte is not None:
        value = int(byte, 16)
        return chr(value) if value < 0x80 else chr(0xDC00 + value)  # a byte, as os.fsdecode has it
    return chr(int(code, 16)) if code is not None else _NAMED_UNESCAPES[named]


def existing_mode(resolved: Path) -> int | None:
    """The mode of what `resolved` names, None when nothing is there; other failures (a name over
    255 bytes) are a ToolError."""
    try:
        return os.stat(resolved).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        raise _translate(err, resolved) from None


def is_special(mode: int) -> bool:
    """A FIFO, socket or device: never opened by a tool (opening or reading one can block for ever)."""
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def _not_regular(resolved: Path, mode: int) -> ToolError:
    if stat.S_ISDIR(mode):
        return ToolError(f"{resolved} is a directory")
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    return ToolError(f"{resolved} is not a regular file ({kind}); not opened")


_REASONS = {
    errno.ENOENT: ": no such file or directory",
    errno.EISDIR: " is a directory",
    errno.ENOTDIR: " is not a directory",
    errno.EACCES: ": permission denied",
    errno.EPERM: ": permission denied",
}


def _translate(err: OSError, path: Path) -> ToolError:
    """One-line ToolError for an OSError; `resolve` left no symlink, so one met now was swapped in."""
    if err.errno == errno.ELOOP or (err.errno == errno.ENOTDIR and os.path.islink(path)):
        return ToolError(f"{path}: a symlink was swapped in after the path was checked; refused")
    return ToolError(f"{path}{_REASONS.get(err.errno or 0, f': {err.strerror or err}')}")
