"""Workspace confinement.

A tool path is resolved against the workspace root with every symlink followed; when the result lies
outside the root (`..`, an absolute path, a symlink pointing out) it is refused, unless the user
granted that path for the call. Checking is not enough on its own: a symlink can be swapped in after
the check. So files are then opened by walking the *resolved* path one component at a time from the
root with `O_NOFOLLOW` (directories opened relative to their parent's descriptor): any symlink met on
the way — which the resolved path cannot legitimately contain — makes the open fail, and the call is
refused. Where the platform lacks `dir_fd`/`O_NOFOLLOW`, the opened file's `fstat` is compared with the
path re-resolved after opening instead.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from nanohermes.core.errors import ToolError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
SAFE_WALK = bool(_NOFOLLOW and _DIRECTORY) and os.open in os.supports_dir_fd
TEMP_STEM_BYTES = 128
"""Bytes of the target's name kept in its temp file's name (the rest of which takes under 60)."""


class OutsideWorkspace(ToolError):
    """A path resolved outside the workspace and was not granted."""

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
        if not isinstance(path, str) or not path.strip():
            raise ToolError("path is empty")
        path = self._as_named(path)
        if "\x00" in path:
            raise ToolError("path contains a NUL byte")
        try:
            os.fsencode(path)  # a lone surrogate ("\ud800" in the JSON) names no file: realpath raises
        except UnicodeError:
            raise ToolError(f"path {path!r} is not valid text (a lone surrogate)") from None
        try:
            candidate = Path(path.strip()).expanduser()
        except (RuntimeError, KeyError, OSError) as err:  # `~nosuchuser/x`, or no home directory
            raise ToolError(
                f"cannot expand {path!r}: {err}", hint="give a path inside the workspace"
            ) from None
        if not candidate.is_absolute():
            candidate = self.root / candidate
        try:
            resolved = candidate.resolve(strict=False)
        except (OSError, RuntimeError) as err:  # symlink loop
            raise ToolError(f"cannot resolve {path!r}: {err}") from None
        if not self.allows(resolved, granted):
            raise OutsideWorkspace(path, resolved, self.root)
        return resolved

    def _as_named(self, path: str) -> str:
        """`path`, or the name it shows in double quotes (`shown_path`) when only that name is there:
        the model passes back a name as the tools showed it."""
        plain = unquoted_path(path.strip())
        if plain is None or os.path.lexists(os.path.join(self.root, path.strip())):
            return path
        return plain if os.path.lexists(os.path.join(self.root, plain)) else path

    def allows(self, resolved: Path, granted: frozenset[Path] = frozenset()) -> bool:
        if resolved.is_relative_to(self.root):
            return True
        return any(resolved.is_relative_to(g) for g in granted)

    def relative(self, resolved: Path) -> str:
        """How to show a resolved path: relative to the root when inside it."""
        if resolved.is_relative_to(self.root):
            return resolved.relative_to(self.root).as_posix() or "."
        return str(resolved)

    def shown(self, resolved: Path) -> str:
        """`relative`, quoted as `shown_path` quotes a name a tool result could not show as it is."""
        return shown_path(self.relative(resolved))

    # -- opening --------------------------------------------------------------------------------

    def open_file(self, resolved: Path, flags: int) -> int:
        """Open the existing file `resolved` (from `resolve`) refusing any symlink met on the way.
        Returns a raw fd. (Writes go through `replace_into`.)"""
        flags |= _NOFOLLOW | _CLOEXEC | _BINARY | _NONBLOCK  # a FIFO swapped in cannot block the open
        if not SAFE_WALK:
            return self._open_checked(resolved, flags)
        parent = self._open_dir_chain(resolved.parent, create=False)
        try:
            _refuse_special_name(resolved.name, parent, resolved)
            fd = os.open(resolved.name, flags, dir_fd=parent)
        except OSError as err:
            raise _translate(err, resolved) from None
        finally:
            os.close(parent)
        return self._refuse_special(fd, resolved)

    def open_dir(self, resolved: Path) -> int:
        """A directory descriptor for `resolved`, refusing symlinks anywhere on the path."""
        if not SAFE_WALK:
            fd = os.open(resolved, os.O_RDONLY | _CLOEXEC)
            self._verify_same(fd, resolved)
            return fd
        return self._open_dir_chain(resolved, create=False)

    @contextlib.contextmanager
    def dir_fd(self, resolved: Path) -> Iterator[int]:
        fd = self.open_dir(resolved)
        try:
            yield fd
        finally:
            os.close(fd)

    def replace_into(self, resolved: Path, data: bytes) -> None:
        """Write `data` to `resolved` atomically (temp file + rename in the same, safely opened dir).
        Directories it creates for the file are removed again when the write fails (a full disk)."""
        made: list[Path] = []
        try:
            self._write_new(resolved, data, made)
        except BaseException:
            self._remove_made(made)
            raise

    def _write_new(self, resolved: Path, data: bytes, made: list[Path]) -> None:
        parent = (
            self._open_dir_chain(resolved.parent, create=True, made=made)
            if SAFE_WALK
            else self._checked_parent(resolved, made)
        )
        temp_name = _temp_name(resolved.name, data)
        kwargs = {"dir_fd": parent} if parent >= 0 else {}
        target = temp_name if parent >= 0 else str(resolved.parent / temp_name)
        try:
            old_mode = _existing_mode(resolved.name, parent, resolved)
            fd = os.open(
                target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | _BINARY, 0o666, **kwargs
            )
            try:
                with os.fdopen(fd, "wb", closefd=False) as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(fd)
                if old_mode is not None and hasattr(os, "fchmod"):
                    os.fchmod(fd, old_mode)
            finally:
                os.close(fd)
            if parent >= 0:
                os.replace(temp_name, resolved.name, src_dir_fd=parent, dst_dir_fd=parent)
            else:
                os.replace(target, resolved)
        except OSError as err:
            with contextlib.suppress(OSError):
                os.unlink(target, **kwargs)  # the fallback's temp file too, not only the safe walk's
            raise _translate(err, resolved) from None
        finally:
            if parent >= 0:
                os.close(parent)

    def _remove_made(self, made: list[Path]) -> None:
        """Remove the directories a failed write created, deepest first, each only while empty."""
        for directory in reversed(made):
            with contextlib.suppress(OSError):
                if SAFE_WALK:
                    with self.dir_fd(directory.parent) as fd:
                        os.rmdir(directory.name, dir_fd=fd)
                else:
                    os.rmdir(directory)

    def _checked_parent(self, resolved: Path, made: list[Path]) -> int:
        """Fallback for replace_into: create the parent, and refuse it if it now resolves elsewhere."""
        missing = [d for d in (resolved.parent, *resolved.parent.parents) if not d.exists()]
        made.extend(reversed(missing))  # outermost first, as the safe walk creates them
        try:
            resolved.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise _translate(err, resolved.parent) from None
        if resolved.parent.resolve() != resolved.parent:
            raise ToolError(
                f"{resolved.parent} changed after it was checked (a symlink swapped in?); refused"
            )
        return -1

    def _open_dir_chain(self, directory: Path, *, create: bool, made: list[Path] | None = None) -> int:
        """Open `directory` by walking from `/` with O_NOFOLLOW on every component; with `create`,
        missing ones are made (and appended to `made`)."""
        fd = os.open(directory.anchor or "/", os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        try:
            for depth, part in enumerate(directory.parts[1:], start=2):
                child = self._step(fd, part, Path(*directory.parts[:depth]), create, made)
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _step(self, fd: int, part: str, here: Path, create: bool, made: list[Path] | None) -> int:
        """Open the directory `part` (the path `here`) inside the directory `fd`."""
        flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
        try:
            try:
                child = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                    if made is not None:
                        made.append(here)
                except FileExistsError:
                    pass  # made meanwhile by someone else: theirs, never removed
                child = os.open(part, flags, dir_fd=fd)
        except NotADirectoryError:
            raise _not_a_directory(part, fd, here) from None
        except OSError as err:
            raise _translate(err, here) from None
        return child

    def _open_checked(self, resolved: Path, flags: int) -> int:
        try:
            _refuse_special_name(str(resolved), None, resolved)
            fd = os.open(resolved, flags)
        except OSError as err:
            raise _translate(err, resolved) from None
        self._verify_same(fd, resolved)
        return self._refuse_special(fd, resolved)

    def _verify_same(self, fd: int, resolved: Path) -> None:
        """Fallback check: the open file is the one the path names now, and still inside."""
        try:
            again = resolved.resolve(strict=True)
            same = again == resolved and os.path.samestat(os.fstat(fd), os.stat(again))
        except OSError:
            same = False
        if not same:
            os.close(fd)
            raise ToolError(
                f"{resolved} changed while it was being opened (a symlink was swapped in); refused"
            )

    @staticmethod
    def _refuse_special(fd: int, resolved: Path) -> int:
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode):
            if _NONBLOCK:
                os.set_blocking(fd, True)
            return fd
        os.close(fd)
        raise _not_regular(resolved, mode)


_UNSAFE = "\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff"
_NEEDS_QUOTES = re.compile(f'[{_UNSAFE}]|^"')
_QUOTED = re.compile(f'[{_UNSAFE}"\\\\]')
_NAMED_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def shown_path(rel: str) -> str:
    """`rel` as tool output shows it. A name holding a newline, an escape sequence, a bidi override,
    an invisible character or a byte that is not UTF-8 could pass for another line of the output or
    another file's name: it is shown in double quotes with those characters escaped (`\\n`, `\\x1b`,
    `\\u202e`, `\\xff`), as git's core.quotePath does. Other names are shown as they are."""
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


_UNESCAPE = re.compile(r"\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|(.))", re.DOTALL)
_NAMED_UNESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def unquoted_path(shown: str) -> str | None:
    """The name `shown_path` showed as `shown`, or None when `shown` is not such a quoted name."""
    if len(shown) < 2 or shown[0] != '"' or shown[-1] != '"':
        return None
    out: list[str] = []
    at = 1
    for match in _UNESCAPE.finditer(shown, 1, len(shown) - 1):
        out.append(shown[at : match.start()])
        byte, code, named = match.groups()
        if byte is not None:
            value = int(byte, 16)
            out.append(chr(value) if value < 0x80 else chr(0xDC00 + value))  # a byte, as os.fsdecode
        elif code is not None:
            out.append(chr(int(code, 16)))
        elif named in _NAMED_UNESCAPES:
            out.append(_NAMED_UNESCAPES[named])
        else:
            return None
        at = match.end()
    rest = shown[at:-1]
    return None if '"' in rest else "".join(out) + rest


def existing_mode(resolved: Path) -> int | None:
    """The mode of what `resolved` names, None when nothing is there. Any other failure is a
    ToolError (`Path.exists` raises on a name over 255 bytes)."""
    try:
        return os.stat(resolved).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        raise _translate(err, resolved) from None


def is_special(mode: int) -> bool:
    """A FIFO, socket or device: never opened by a tool (opening or reading one can block for ever)."""
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def _refuse_special_name(name: str, parent: int | None, resolved: Path) -> None:
    """Refuse a FIFO, socket or device before opening it (opening some devices has effects)."""
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False) if parent is not None else os.lstat(name)
    except OSError:
        return  # the open that follows reports it
    if is_special(st.st_mode):
        raise _not_regular(resolved, st.st_mode)


def _not_regular(resolved: Path, mode: int) -> ToolError:
    if stat.S_ISDIR(mode):
        return ToolError(f"{resolved} is a directory")
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    return ToolError(f"{resolved} is not a regular file ({kind}); not opened")


def _temp_name(name: str, data: bytes) -> str:
    """The temp file beside `name`: its name cut so that the temp's stays within NAME_MAX (255 bytes)
    even when `name` itself is close to it."""
    stem = os.fsencode(name)[:TEMP_STEM_BYTES].decode("utf-8", "ignore") or "file"
    return f".{stem}.nanohermes-{os.getpid()}-{id(data):x}.tmp"


def _existing_mode(name: str, parent: int, resolved: Path) -> int | None:
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False) if parent >= 0 else os.lstat(resolved)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise ToolError(f"{resolved} became a symlink after it was checked; refused")
    if stat.S_ISDIR(st.st_mode) or is_special(st.st_mode):  # a FIFO or socket a program listens on
        raise _not_regular(resolved, st.st_mode)
    return stat.S_IMODE(st.st_mode)


def _not_a_directory(part: str, parent: int, here: Path) -> ToolError:
    """The error for a path component that is not a directory: a symlink (swapped in after the
    check: `resolve` leaves none) or a file standing where the path needs a directory."""
    try:
        is_link = stat.S_ISLNK(os.stat(part, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        is_link = False
    if is_link:
        return ToolError(f"{here}: a symlink was swapped in after the path was checked; refused")
    return ToolError(f"{here} is not a directory")


def _translate(err: OSError, path: Path) -> ToolError:
    """One-line ToolError for an OSError met while opening `path`."""
    if err.errno == errno.ELOOP or (err.errno == errno.ENOTDIR and path.exists()):
        return ToolError(f"{path}: a symlink was swapped in after the path was checked; refused")
    if err.errno == errno.ENOENT:
        return ToolError(f"{path}: no such file or directory")
    if err.errno == errno.EISDIR:
        return ToolError(f"{path} is a directory")
    if err.errno in (errno.EACCES, errno.EPERM):
        return ToolError(f"{path}: permission denied")
    return ToolError(f"{path}: {err.strerror or err}")
