"""run_shell: one command in its own process group, with a timeout, killable, output capped as read.

The command runs in a new session (`start_new_session`), so it and everything it starts share one
process group; on timeout or cancellation the whole group gets SIGTERM, then SIGKILL after a short
grace. Each stream is read in chunks by its own thread into a `CappedBuffer` keeping only a head and a
tail, so a command printing 10 MB never holds more than the cap in memory. The report (exit code, both
streams, their notes) fits the cap as a whole, so the runner never cuts it again and the note the model
sees says how many bytes the command really printed beyond it.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from nanohermes.errors import Cancelled, ToolError
from nanohermes.tools.base import CallContext
from nanohermes.tools.reaper import kill_tagged, new_tag, tagged_env
from nanohermes.tools.sandbox import Sandbox

KILL_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL of the process group."""
PIPE_GRACE = 2.0
"""After the shell exits, how long background processes may keep its output pipes open."""
CHUNK = 64 * 1024
STREAM_OVERHEAD = 48
"""Characters of the report kept for each stream's label and its "[… N bytes omitted …]" note."""


class CappedBuffer:
    """Keeps the first and last `limit // 2` bytes written, and counts the rest. Thread-safe: a
    process that could not be stopped may still be writing while the report is read."""

    def __init__(self, limit: int) -> None:
        self.half = max(1, limit // 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            self._write(data)

    def _write(self, data: bytes) -> None:
        self.total += len(data)
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > 2 * self.half:
                del self.tail[: len(self.tail) - self.half]

    @property
    def shown(self) -> int:
        """Bytes `text()` shows when not given a smaller limit."""
        return min(self.total, 2 * self.half)

    def text(self, limit: int | None = None) -> str:
        """What was written, cut to at most `limit` bytes (default: all it can show), head and tail
        around a note of how many bytes were left out."""
        with self._lock:
            return self._text(limit)

    def _text(self, limit: int | None) -> str:
        limit = 2 * self.half if limit is None else max(0, min(limit, 2 * self.half))
        complete = self.total == len(self.head) + len(self.tail)  # nothing dropped while writing
        head = bytes(self.head[: limit // 2])
        rest = bytes(self.head[len(head) :] + self.tail) if complete else bytes(self.tail)
        tail = rest[max(0, len(rest) - (limit - len(head))) :]
        omitted = self.total - len(head) - len(tail)
        head_text = head.decode("utf-8", errors="replace")
        tail_text = tail.decode("utf-8", errors="replace")
        if omitted > 0:
            return f"{head_text}\n[… {omitted} bytes omitted …]\n{tail_text}"
        return head_text + tail_text


def _pump(stream: IO[bytes], sink: CappedBuffer) -> None:
    """Read `stream` into `sink` until its last writer closes it, then close it. Only this thread
    closes it: closing a pipe another thread is reading from waits for that read to end."""
    try:
        with contextlib.suppress(OSError, ValueError):
            while chunk := stream.read1(CHUNK) if hasattr(stream, "read1") else stream.read(CHUNK):
                sink.write(chunk)
    finally:
        with contextlib.suppress(OSError):
            stream.close()


class ShellTool:
    def __init__(
        self,
        workspace: Path,
        *,
        timeout: float = 120.0,
        max_chars: int = 20_000,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.cwd = workspace
        self.sandbox = sandbox or Sandbox.off()
        self.default_timeout = timeout
        self.max_chars = max_chars

    def run_shell(self, command: str, timeout: float | None = None, *, ctx: CallContext) -> str:
        """Run a shell command in the workspace directory and report its exit code and output.

        Args:
            command: the command line, run by the system shell
            timeout: seconds before the command and everything it started are killed
        """
        if not command.strip():
            raise ToolError("command is empty")
        limit, note = self._timeout(timeout)
        ctx.cancel.raise_if_cancelled()
        tag = new_tag()
        process = self._start(command, tag)
        out, err = CappedBuffer(self.max_chars), CappedBuffer(self.max_chars)
        readers = [
            threading.Thread(target=_pump, args=(process.stdout, out), daemon=True),
            threading.Thread(target=_pump, args=(process.stderr, err), daemon=True),
        ]
        for reader in readers:
            reader.start()

        def stop() -> None:  # runs in the cancelling thread: signal only, never wait
            signal_group(process, signal.SIGTERM)

        unregister = ctx.cancel.on_cancel(stop)
        timed_out = lingering = escaped = False
        try:
            timed_out = self._wait(process, limit, ctx)
            if timed_out:
                kill_tagged(tag)
            lingering = _join(readers, PIPE_GRACE)
            if lingering:  # background processes still hold the pipes
                kill_group(process)
                kill_tagged(tag)
                escaped = _join(readers, PIPE_GRACE)  # held by one that left the group and the tag
        finally:
            unregister()
            if process.poll() is None:
                kill_group(process)
                kill_tagged(tag)
            elif ctx.cancel.cancelled:  # also what left the group (setsid)
                kill_tagged(tag)
        if ctx.cancel.cancelled:
            raise Cancelled()
        held = "escaped" if escaped else "stopped" if lingering else ""
        return self._report(process.returncode, out, err, timed_out, limit, note, held)

    def _timeout(self, requested: float | None) -> tuple[float, str]:
        """The limit for one call: the setting, or less when the model asks for less. NaN, infinite,
        zero or negative values are refused; more than the setting is capped at it, never unbounded."""
        if requested is None:
            return self.default_timeout, ""
        if not math.isfinite(requested) or requested <= 0:
            raise ToolError(
                f"timeout must be a positive, finite number of seconds (at most {self.default_timeout:g}), "
                f"not {requested!r}"
            )
        if requested > self.default_timeout:
            return (
                self.default_timeout,
                f"(timeout capped at the shell_timeout setting, {self.default_timeout:g} s)",
            )
        return float(requested), ""

    def _start(self, command: str, tag: str) -> subprocess.Popen[bytes]:
        windows = sys.platform == "win32"
        argv = self.sandbox.argv(command)  # None: run it plainly
        try:
            return subprocess.Popen(
                argv or command,
                shell=argv is None,
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                env=self.sandbox.environment(tagged_env(tag)),  # the tag: see tools/reaper.py
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=not windows,
                creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0) if windows else 0,
            )
        except OSError as err:
            raise ToolError(f"could not start the shell: {err.strerror or err}") from None
        except ValueError as err:  # a NUL byte or a lone surrogate: no argv can hold it
            raise ToolError(f"command cannot be run: {err}") from None

    @staticmethod
    def _wait(process: subprocess.Popen[bytes], limit: float, ctx: CallContext) -> bool:
        """Wait for the shell; True when it ran past `limit` (its group is then killed)."""
        deadline = time.monotonic() + limit
        while not ctx.cancel.cancelled:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                kill_group(process)
                return True
            try:
                process.wait(timeout=min(remaining, 0.25))
                return False
            except subprocess.TimeoutExpired:
                continue
        kill_group(process)
        return False

    def _report(
        self,
        code: int | None,
        out: CappedBuffer,
        err: CappedBuffer,
        timed_out: bool,
        limit: float,
        note: str,
        held: str,
    ) -> str:
        """The report; `held`: "stopped" or "escaped" when background processes kept the output open."""
        if timed_out:
            head = f"timed out after {limit:g} s: the command and its process group were killed"
        elif code is not None and code < 0:
            head = f"killed by signal {-code}"
        else:
            head = f"exit code: {code}"
        lines = [" ".join(part for part in (head, note) if part)]
        if held == "stopped":
            lines.append(
                "(background processes kept the output open and were stopped; "
                "redirect their output to keep them running)"
            )
        elif held:
            lines.append(
                "(background processes kept the output open; one that left the process group and "
                "cleared its environment could not be stopped and may still run; output shown so far)"
            )
        blocked = self.sandbox.blocked_note(err.text() + (out.text() if code else ""))
        used = sum(len(line) + 1 for line in (*lines, blocked) if line)
        room = self.max_chars - used - 2 * STREAM_OVERHEAD
        shares = _share(max(0, room), out.shown, err.shown)
        for label, buffer, share in (("stdout", out, shares[0]), ("stderr", err, shares[1])):
            text = buffer.text(share).rstrip("\n")
            lines.append(f"{label}:\n{text}" if text else f"{label}: (empty)")
        return "\n".join([*lines, blocked] if blocked else lines)


def _share(room: int, first: int, second: int) -> tuple[int, int]:
    """Split `room` between two streams of `first` and `second` bytes: the smaller one gets what it
    needs, up to half; the other one the rest."""
    if first <= second:
        small = min(first, room // 2)
        return small, room - small
    small = min(second, room // 2)
    return room - small, small


def signal_group(process: subprocess.Popen[bytes], signum: int) -> bool:
    """Send `signum` to the command's process group; False when the group is gone. Never blocks."""
    if sys.platform == "win32":
        with contextlib.suppress(OSError):
            subprocess.run(
                ["taskkill", "/F", "/T", "/PID", str(process.pid)], capture_output=True, check=False
            )
        return False
    try:
        os.killpg(process.pid, signum)  # start_new_session: the shell leads its own group
    except (ProcessLookupError, PermissionError):
        return False
    return True


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, then SIGKILL it after KILL_GRACE (members ignoring TERM included)."""
    if not signal_group(process, signal.SIGTERM):
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=KILL_GRACE)
    signal_group(process, getattr(signal, "SIGKILL", signal.SIGTERM))
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=KILL_GRACE)


def _join(threads: list[threading.Thread], timeout: float) -> bool:
    """Join the threads within `timeout` seconds in all; True when some are still running."""
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return any(thread.is_alive() for thread in threads)
