"""run_shell (and hooks): a command in its own process group, with a timeout, killable. Each stream
is read by its own thread into a `CappedBuffer` (head and tail only: 10 MB of output never sits in
memory); the report fits the cap as a whole, its notes saying how many bytes really came."""

from __future__ import annotations

import contextlib
import errno
import math
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import Cancelled, ToolError
from nanohermes.core.types import shorten
from nanohermes.tools.base import CallContext
from nanohermes.tools.reaper import TAG_VAR, kill_tagged, new_tag
from nanohermes.tools.sandbox import Sandbox

KILL_GRACE = 0.5  # seconds between SIGTERM and SIGKILL of the process group
PIPE_GRACE = 2.0  # after the shell exits, how long background processes may hold its output pipes
CHUNK = 64 * 1024
POLL = 0.1  # how often a reader checks whether it was told to stop
HELD_NOTES = {
    "stopped": "(background processes kept the output open and were stopped; "
    "redirect their output to keep them running)",
    "escaped": "(background processes kept the output open; one that left the process group and "
    "cleared its environment could not be stopped and may still run; output shown so far)",
}
STREAM_OVERHEAD = 48  # characters kept for each stream's label and its "[… N bytes omitted …]" note


class CappedBuffer:
    """The first and last `limit // 2` bytes written. Locked: an unkillable writer may still write."""

    def __init__(self, limit: int) -> None:
        self.half = max(1, limit // 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            self.total += len(data)
            room = self.half - len(self.head)
            if room > 0:
                self.head += data[:room]
                data = data[room:]
            self.tail += data
            if len(self.tail) > 2 * self.half:
                del self.tail[: len(self.tail) - self.half]

    @property
    def shown(self) -> int:
        return min(self.total, 2 * self.half)

    def text(self, limit: int | None = None) -> str:
        """What was written, cut to at most `limit` bytes around a note of how many were left out."""
        with self._lock:
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


def _pump(stream: IO[bytes], sink: CappedBuffer, stop: threading.Event) -> None:
    """Read `stream` into `sink` until EOF or `stop`, then close it here (closing a pipe another thread
    reads waits for that read). `stop` frees us from a pipe an unkillable process holds open."""
    try:
        with contextlib.suppress(OSError, ValueError):
            fd = stream.fileno()
            poller = select.poll() if hasattr(select, "poll") else None  # Windows: reads block
            if poller is not None:
                poller.register(fd, select.POLLIN)
            while not stop.is_set():
                if poller is not None and not poller.poll(POLL * 1000):
                    continue
                chunk = os.read(fd, CHUNK)
                if not chunk:
                    break
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
        self.sandbox = sandbox or Sandbox()
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
        out, err = CappedBuffer(self.max_chars), CappedBuffer(self.max_chars)
        code, timed_out, held = run_command(command, self.sandbox, self.cwd, limit, ctx.cancel, out, err)
        if timed_out:
            head = f"timed out after {limit:g} s: the command and its process group were killed"
        elif code is not None and code < 0:
            head = f"killed by signal {-code}"
        else:
            head = f"exit code: {code}"
        lines = [" ".join(part for part in (head, note) if part)] + ([HELD_NOTES[held]] if held else [])
        return self._report(lines, out, err, failed=bool(code))

    def _timeout(self, requested: float | None) -> tuple[float, str]:
        """The setting, or less when the model asks for less: never more, never unbounded."""
        cap = self.default_timeout
        if requested is None:
            return cap, ""
        # compared, not float()ed: a whole number past float's range (10**400) is merely huge
        number = isinstance(requested, int | float) and not isinstance(requested, bool)
        if not number or not 0 < requested < math.inf:  # also NaN
            raise ToolError(
                f"timeout must be a positive, finite number of seconds (at most {cap:g}), "
                f"not {shorten(repr(requested), 40)}"
            )
        if requested > cap:
            return cap, f"(timeout capped at the shell_timeout setting, {cap:g} s)"
        return float(requested), ""

    def _report(self, lines: list[str], out: CappedBuffer, err: CappedBuffer, *, failed: bool) -> str:
        """`lines` and both streams, fitting the cap as a whole."""
        blocked = self.sandbox.blocked_note(err.text() + (out.text() if failed else ""))
        used = sum(len(line) + 1 for line in (*lines, blocked) if line)
        room = max(0, self.max_chars - used - 2 * STREAM_OVERHEAD)
        # the smaller stream gets what it needs, up to half; the other one the rest
        small = min(out.shown, err.shown, room // 2)
        shares = (small, room - small) if out.shown <= err.shown else (room - small, small)
        for label, buffer, share in (("stdout", out, shares[0]), ("stderr", err, shares[1])):
            text = buffer.text(share).rstrip("\n")
            lines.append(f"{label}:\n{text}" if text else f"{label}: (empty)")
        return "\n".join([*lines, blocked] if blocked else lines)


def run_command(
    command: str,
    sandbox: Sandbox,
    cwd: Path,
    limit: float,
    cancel: CancelToken,
    out: CappedBuffer,
    err: CappedBuffer,
    stdin: int | IO[bytes] = subprocess.DEVNULL,
) -> tuple[int | None, bool, str]:
    """(exit code, whether it ran past `limit`, "stopped"/"escaped" when background processes kept its
    output open). Raises Cancelled, or ToolError."""
    cancel.raise_if_cancelled()
    tag = new_tag()
    process = _start(command, sandbox, cwd, tag, stdin)
    done_reading = threading.Event()
    readers = start_readers(process, tag, ((process.stdout, out), (process.stderr, err)), done_reading)
    # runs in the cancelling thread: signal only, never wait
    unregister = cancel.on_cancel(lambda: signal_group(process, signal.SIGTERM))
    timed_out = lingering = escaped = False
    try:
        timed_out = _wait(process, limit, cancel)
        if timed_out or cancel.cancelled:  # at once: also what left the group (setsid)
            kill_tagged(tag)
        lingering = join_readers(readers, PIPE_GRACE, cancel)
        if lingering and not cancel.cancelled:  # background processes still hold the pipes
            kill_group(process)
            kill_tagged(tag)
            escaped = join_readers(readers, PIPE_GRACE, cancel)  # held by one that left group and tag
    finally:  # also on KeyboardInterrupt (a session_start hook in -p)
        unregister()
        done_reading.set()  # what still holds the pipes is not read any more (see _pump)
        if process.poll() is None or cancel.cancelled:
            kill_group(process)
            kill_tagged(tag)
        join_readers(readers, 2 * POLL)
    if cancel.cancelled:
        raise Cancelled()
    return process.returncode, timed_out, "escaped" if escaped else "stopped" if lingering else ""


def _start(
    command: str, sandbox: Sandbox, cwd: Path, tag: str, stdin: int | IO[bytes]
) -> subprocess.Popen[bytes]:
    windows = sys.platform == "win32"
    argv = sandbox.argv(command)  # None: run it plainly
    try:
        return subprocess.Popen(
            argv or command,
            shell=argv is None,
            cwd=cwd,
            stdin=stdin,
            env=sandbox.environment({**os.environ, TAG_VAR: tag}),  # the tag: see tools/reaper.py
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=not windows,
            creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0) if windows else 0,
        )
    except OSError as err:
        if err.errno == errno.E2BIG:  # Linux takes at most 128 KiB in one argument
            raise ToolError(
                f"command too long to run ({len(command)} characters): write it to a script file and run that"
            ) from None
        where = f": {err.filename}" if err.filename else ""  # a workspace a command removed
        raise ToolError(f"could not start the shell: {err.strerror or err}{where}") from None
    except ValueError as err:  # a NUL byte or a lone surrogate: no argv can hold it
        raise ToolError(f"command cannot be run: {err}") from None


def _wait(process: subprocess.Popen[bytes], limit: float, cancel: CancelToken) -> bool:
    """Wait for the shell; True when it ran past `limit` (its group is then killed)."""
    deadline = time.monotonic() + limit
    while not cancel.cancelled:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            kill_group(process)
            return True
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=min(remaining, 0.25))
            return False
    return False  # cancelled: run_command kills what is left


def shown_seconds(value: float) -> str:
    """A number of seconds for a title; a whole number past float's range (10**400) has no `:g`."""
    try:
        return f"{value:g}"
    except OverflowError:
        return "more than 1e308"


def start_readers(
    process: subprocess.Popen[bytes],
    tag: str,
    streams: tuple[tuple[IO[bytes] | None, CappedBuffer], ...],
    stop: threading.Event,
) -> list[threading.Thread]:
    """One reader thread per stream. When one cannot start (a runaway command used up the user's
    processes), the command is killed and the call fails."""
    readers = [
        threading.Thread(target=_pump, args=(stream, sink, stop), name="nanohermes-shell-reader", daemon=True)
        for stream, sink in streams
    ]
    try:
        for reader in readers:
            reader.start()
    except RuntimeError as error:
        stop.set()
        kill_group(process)
        kill_tagged(tag)
        for reader, (stream, _) in zip(readers, streams, strict=True):
            if stream is not None and reader.ident is None:  # a started reader closes its own
                stream.close()
        raise ToolError(f"could not read the command's output ({error}); it was stopped") from None
    return readers


def signal_group(process: subprocess.Popen[bytes], signum: int) -> bool:
    """Send `signum` to the command's process group; False when the group is gone. Never blocks."""
    if sys.platform == "win32":
        with contextlib.suppress(OSError):
            subprocess.run(["taskkill", "/F", "/T", "/PID", str(process.pid)], capture_output=True)
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


def join_readers(threads: list[threading.Thread], timeout: float, cancel: CancelToken | None = None) -> bool:
    """Join within `timeout` seconds in all, or until cancelled; True when some are still running."""
    deadline = time.monotonic() + timeout
    for thread in threads:
        while thread.is_alive() and not (cancel is not None and cancel.cancelled):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            thread.join(min(remaining, POLL))
    return any(thread.is_alive() for thread in threads)
