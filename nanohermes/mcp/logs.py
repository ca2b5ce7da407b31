"""Where stdio MCP servers' stderr goes: `<log_dir>/<name>.log`, never the terminal.

The server process writes to the file itself (it is its stderr), so a chatty server cannot flood the
terminal; a log that grew past `MAX_LOG_BYTES` is moved to `<name>.log.old` when the server next
starts (one old file kept). The last line a server wrote since it started goes into error messages.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import TextIO

from nanohermes.mcp_config import sanitize

MAX_LOG_BYTES = 1_000_000
TAIL_BYTES = 8192


class ServerLogs:
    def __init__(self, directory: Path | None) -> None:
        """`directory`: where the logs go (None: nowhere)."""
        self._directory = directory
        self._files: dict[str, TextIO] = {}
        self._starts: dict[str, int] = {}
        self._unlogged: dict[str, str] = {}
        """Servers whose log could not be written at their last start, with the reason."""

    def path(self, name: str) -> Path | None:
        return None if self._directory is None else self._directory / f"{sanitize(name)}.log"

    def open(self, name: str) -> TextIO:
        """The stderr for a (re)start of server `name`, headed by a line saying when it started. A log
        that cannot be written (a full or read-only disk) does not stop the server: its stderr is
        discarded for this start, and `hint` says why."""
        log = self._files.get(name)
        try:
            if log is None or log.closed:
                log = self._open_file(name)
            log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting {name}\n")
            log.flush()
            self._starts[name] = log.tell()
            self._unlogged.pop(name, None)
        except OSError as err:
            if log is not None:
                _close_quietly(log)
            log = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (closed in close())
            self._unlogged[name] = err.strerror or str(err)
        self._files[name] = log
        return log

    def _open_file(self, name: str) -> TextIO:
        path = self.path(name)
        if path is None:
            return open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (closed in close())
        path.parent.mkdir(parents=True, exist_ok=True)
        _rotate(path)
        return open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())

    def hint(self, name: str) -> str:
        """` (its stderr is in …)` for error messages, or "" without a log."""
        path = self.path(name)
        if path is not None and name in self._unlogged:
            return f" (its stderr could not be logged in {path}: {self._unlogged[name]})"
        return "" if path is None else f" (its stderr is in {path})"

    def tail(self, name: str) -> str:
        """The last line the server wrote to stderr since it last started, or ""."""
        path = self.path(name)
        if name not in self._files or name in self._unlogged or path is None:
            return ""
        try:
            with open(path, "rb") as log:
                size = log.seek(0, os.SEEK_END)
                log.seek(max(self._starts.get(name, 0), size - TAIL_BYTES))
                since = log.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        lines = [line.strip() for line in since.splitlines() if line.strip()]
        return lines[-1][:200] if lines else ""

    def close(self) -> None:
        for log in self._files.values():
            _close_quietly(log)


def _close_quietly(log: TextIO) -> None:
    """Close `log`; what it still buffered is lost when the disk is full (only our own header line:
    the server writes to the file itself), and the descriptor is closed either way."""
    with contextlib.suppress(OSError):
        log.close()


def _rotate(path: Path) -> None:
    """Move a log grown past MAX_LOG_BYTES to `<name>.log.old` (replacing the previous one)."""
    with contextlib.suppress(OSError):
        if path.stat().st_size > MAX_LOG_BYTES:
            path.replace(path.with_name(path.name + ".old"))
