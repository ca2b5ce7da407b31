"""Where stdio MCP servers' stderr goes: `<log_dir>/<name>.log`, never the terminal.

The transport reads the server's stderr and writes it here (`ServerLog`), so a chatty server can flood
neither the terminal nor the disk: of each start's output the log keeps the first `MAX_LOG_BYTES`
characters, then says that the rest was dropped; a log that grew past `MAX_LOG_BYTES` is moved to
`<name>.log.old` when the server next starts (one old file kept). The last line a server wrote since it
started (dropped or not) goes into error messages.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import TextIO

from nanohermes.config.mcp_config import sanitize

MAX_LOG_BYTES = 1_000_000
TAIL_BYTES = 8192


class ServerLog:
    """One start's stderr of a server: written to its log until `limit` characters, then only its
    last `TAIL_BYTES` are kept (in memory, for `tail`), and the log says so once."""

    def __init__(self, file: TextIO, limit: int = MAX_LOG_BYTES) -> None:
        self._file = file
        self._room = limit
        self._limit = limit
        self._recent = ""
        self.error: str | None = None
        """Why the log could not be written (a full disk): what followed was lost."""

    def write(self, text: str) -> int:
        self._recent = (self._recent + text)[-TAIL_BYTES:]
        if self._room <= 0 or self.error is not None:
            return len(text)
        kept = text[: self._room]
        self._room -= len(text)
        if self._room < 0:
            end = "" if kept.endswith("\n") else "\n"
            kept += f"{end}--- output past {self._limit:,} characters dropped until the next start\n"
        try:
            self._file.write(kept)
        except OSError as err:
            self.error = err.strerror or str(err)
        return len(text)

    def flush(self) -> None:
        if self.error is None:
            try:
                self._file.flush()
            except OSError as err:
                self.error = err.strerror or str(err)

    def fileno(self) -> int:
        """The log file's descriptor (the SDK's transport on Windows gives it to the server)."""
        return self._file.fileno()

    def last_line(self) -> str:
        lines = [line.strip() for line in self._recent.splitlines() if line.strip()]
        return lines[-1][:200] if lines else ""


class ServerLogs:
    def __init__(self, directory: Path | None) -> None:
        """`directory`: where the logs go (None: nowhere)."""
        self._directory = directory
        self._files: dict[str, TextIO] = {}
        self._logs: dict[str, ServerLog] = {}
        self._unlogged: dict[str, str] = {}
        """Servers whose log could not be written at their last start, with the reason."""

    def path(self, name: str) -> Path | None:
        return None if self._directory is None else self._directory / f"{sanitize(name)}.log"

    def open(self, name: str) -> ServerLog:
        """The stderr for a (re)start of server `name`, headed by a line saying when it started. A log
        that cannot be written (a full or read-only disk) does not stop the server: its stderr is
        discarded for this start, and `hint` says why."""
        log = self._files.get(name)
        try:
            if log is not None and not log.closed and log.tell() > MAX_LOG_BYTES:
                log.close()  # moved aside below: a server restarted many times fills no disk either
            if log is None or log.closed:
                log = self._open_file(name)
            log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting {name}\n")
            log.flush()
            self._unlogged.pop(name, None)
        except OSError as err:
            if log is not None:
                _close_quietly(log)
            log = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (closed in close())
            self._unlogged[name] = err.strerror or str(err)
        self._files[name] = log
        self._logs[name] = ServerLog(log)
        return self._logs[name]

    def _open_file(self, name: str) -> TextIO:
        path = self.path(name)
        if path is None:
            return open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (closed in close())
        path.parent.mkdir(parents=True, exist_ok=True)
        _rotate(path)
        return open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())

    def _why_unlogged(self, name: str) -> str | None:
        log = self._logs.get(name)
        return self._unlogged.get(name) or (log.error if log is not None else None)

    def hint(self, name: str) -> str:
        """` (its stderr is in …)` for error messages, or "" without a log."""
        path = self.path(name)
        if path is None:
            return ""
        why = self._why_unlogged(name)
        if why is not None:
            return f" (its stderr could not be logged in {path}: {why})"
        return f" (its stderr is in {path})"

    def tail(self, name: str) -> str:
        """The last line the server wrote to stderr since it last started, or ""."""
        log = self._logs.get(name)
        if log is None or name in self._unlogged or self.path(name) is None:
            return ""
        return log.last_line()

    def close(self) -> None:
        for log in self._files.values():
            _close_quietly(log)


def _close_quietly(log: TextIO) -> None:
    """Close `log`; what it still buffered is lost when the disk is full, and the descriptor is closed
    either way."""
    with contextlib.suppress(OSError):
        log.close()


def _rotate(path: Path) -> None:
    """Move a log grown past MAX_LOG_BYTES to `<name>.log.old` (replacing the previous one)."""
    with contextlib.suppress(OSError):
        if path.stat().st_size > MAX_LOG_BYTES:
            path.replace(path.with_name(path.name + ".old"))
