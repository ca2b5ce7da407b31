"""Where stdio MCP servers' stderr goes: `<log_dir>/<name>.log`, never the terminal.

Each start's first MAX_LOG_BYTES characters are kept, and a bigger log is moved to `<name>.log.old` at
the next start. A log that cannot be written (a full disk) never stops the server: `hint` says why."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import TextIO

from nanohermes.config.mcp_config import sanitize
from nanohermes.core.errors import reason

MAX_LOG_BYTES = 1_000_000
TAIL_BYTES = 8192


class ServerLog:
    """One start's stderr: its first MAX_LOG_BYTES characters in `file`, its last TAIL_BYTES in memory."""

    def __init__(self, file: TextIO, error: str | None = None) -> None:
        self._file = file
        self._room = MAX_LOG_BYTES
        self._recent = ""
        self.error = error  # why the log could not be written: what followed was lost

    def write(self, text: str) -> int:
        self._recent = (self._recent + text)[-TAIL_BYTES:]
        if self._room <= 0 or self.error is not None:
            return len(text)
        kept = text[: self._room]
        self._room -= len(text)
        if self._room < 0:
            end = "" if kept.endswith("\n") else "\n"
            kept += f"{end}--- output past {MAX_LOG_BYTES:,} characters dropped until the next start\n"
        try:
            self._file.write(kept)
            self._file.flush()  # the log is read while the server runs
        except (OSError, ValueError) as err:  # a full disk; a log closed meanwhile
            self.error = reason(err)
        return len(text)

    def fileno(self) -> int:  # the SDK's transport on Windows gives it to the server
        return self._file.fileno()

    def last_line(self) -> str:
        lines = [line.strip() for line in self._recent.splitlines() if line.strip()]
        return lines[-1][:200] if lines else ""

    def close(self) -> None:
        with contextlib.suppress(OSError):  # what it still buffered is lost when the disk is full
            self._file.close()


class ServerLogs:
    """One manager's servers' logs in `directory` (None: nowhere)."""

    def __init__(self, directory: Path | None) -> None:
        self._directory = directory
        self._logs: dict[str, ServerLog] = {}

    def path(self, name: str) -> Path | None:
        return None if self._directory is None else self._directory / f"{sanitize(name)}.log"

    def open(self, name: str) -> ServerLog:
        old = self._logs.pop(name, None)
        if old is not None:
            old.close()
        path = self.path(name)
        file, error = None, None
        try:
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                with contextlib.suppress(OSError):
                    if path.stat().st_size > MAX_LOG_BYTES:
                        path.replace(path.with_name(path.name + ".old"))
            file = open(os.devnull if path is None else path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
            file.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting {name}\n")
            file.flush()
        except OSError as err:
            file = file or open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (closed in close())
            error = reason(err)
        log = self._logs[name] = ServerLog(file, error=error)
        return log

    def hint(self, name: str) -> str:
        """` (its stderr is in …)` for error messages, or "" without a log."""
        path, log = self.path(name), self._logs.get(name)
        if path is None:
            return ""
        if log is not None and log.error is not None:
            return f" (its stderr could not be logged in {path}: {log.error})"
        return f" (its stderr is in {path})"

    def tail(self, name: str) -> str:
        """The last line of stderr since the last start."""
        log = self._logs.get(name)
        return "" if log is None or log.error is not None or self._directory is None else log.last_line()

    def close(self) -> None:
        for log in self._logs.values():
            log.close()
