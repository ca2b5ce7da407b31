"""What nanohermes watches of the `--local` server: its output, copied to a bounded log by `LogPump`,
and whether the socket answering on its port is its own (`listens`)."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import BinaryIO

LOG_HEAD_BYTES = 1_000_000  # of the server's output the log keeps this much, then its last TAIL_BYTES
TAIL_BYTES = 8192


class LogPump:
    """Copies the server's output to its log: the first LOG_HEAD_BYTES, then, once it ends, how much was
    left out and the last TAIL_BYTES (`tail`, also for error messages). The pipe is always drained, so
    the server never blocks on it, not even when the log cannot be written (a full disk)."""

    def __init__(self, read_end: int, log_path: Path) -> None:
        self._fd = read_end
        self._path = log_path
        self.tail = b""  # replaced whole, never changed in place: readers need no lock
        self._thread = threading.Thread(target=self._run, name="local-server-log", daemon=True)
        self._thread.start()

    def finish(self) -> None:
        self._thread.join(1.0)  # bounded: a process still holding the pipe open must not hold up nanohermes

    def _run(self) -> None:
        try:
            with open(self._path, "ab", buffering=0) as log:
                self._copy(log)
        except OSError:  # the log cannot be opened: drain the pipe anyway, keep the tail in memory
            self._copy(None)
        finally:
            os.close(self._fd)

    def _copy(self, log: BinaryIO | None) -> None:
        room, dropped = LOG_HEAD_BYTES, 0
        while chunk := os.read(self._fd, 1 << 16):
            self.tail = (self.tail + chunk)[-TAIL_BYTES:]
            dropped += max(0, len(chunk) - room)
            if room > 0 and log is not None:
                try:
                    log.write(chunk[:room])
                except OSError:  # a full disk: what follows is not logged
                    log = None
            room = max(0, room - len(chunk))
        if dropped and log is not None:
            shown = self.tail[-dropped:]
            note = f"\n--- {dropped - len(shown):,} bytes of output left out; the last {len(shown):,}:\n"
            with contextlib.suppress(OSError):
                log.write(note.encode() + shown)


def listens(pid: int, port: int) -> bool:
    """Whether process `pid` holds the socket listening on TCP `port` (so no other process answers in
    its place). True where /proc cannot tell: not Linux, or no listener listed (WSL 1)."""
    rows: list[str] = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            rows += Path(table).read_text().splitlines()[1:]
    suffix = f":{port:04X}"
    listeners = {
        f"socket:[{fields[9]}]"
        for fields in (row.split() for row in rows)
        if len(fields) > 9 and fields[1].endswith(suffix) and fields[3] == "0A"  # 0A: LISTEN
    }
    try:
        fds = os.listdir(f"/proc/{pid}/fd") if listeners else []
    except OSError:  # it has exited (our own child: its fds are ours to read)
        return False
    return not listeners or any(_link(f"/proc/{pid}/fd/{fd}") in listeners for fd in fds)


def _link(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:  # closed meanwhile
        return ""
