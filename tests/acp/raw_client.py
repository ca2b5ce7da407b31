"""The real `nanohermes acp` process driven byte by byte: what a buggy or hostile client sends
(broken JSON, odd ids, malformed replies), and every line of stdout checked to be strict JSON.

with raw_server(fake_server, workspace) as server:
    server.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    reply = server.reply(1)
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import struct
import subprocess
import tempfile
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from cli_process import child_env, nanohermes_command
from fake_server import FakeServer
from mcp_helpers import wait_for


def unread(pipe: Any) -> int:
    """How many bytes written to `pipe` are not read yet (asked at either of its ends)."""
    return int(struct.unpack("i", fcntl.ioctl(pipe.fileno(), termios.FIONREAD, b"\0" * 4))[0])


def holds(pid: int, link: str) -> bool:
    """Whether process `pid` has a file descriptor open on `link` (`pipe:[INODE]`); False once it is gone."""
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):  # closed meanwhile
            if os.readlink(fd) == link:
                return True
    return False


def strict_json(line: bytes) -> Any:
    """A line of the server's stdout as JSON; NaN and Infinity are not JSON."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} in the server's output")

    return json.loads(line, parse_constant=refuse)


class RawServer:
    def __init__(self, process: subprocess.Popen[bytes], stderr: Any) -> None:
        self.process = process
        self.stderr_file = stderr
        self.messages: list[dict[str, Any]] = []
        self._buffer = b""
        self._taken: set[int] = set()
        self._kept: str | None = None

    def send(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else (json.dumps(message) + "\n").encode()
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def request(self, request_id: Any, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})

    def initialize(self, fs: bool = False) -> dict[str, Any]:
        capabilities = {"fs": {"readTextFile": fs, "writeTextFile": fs}}
        self.request("init", "initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
        return self.reply("init")

    def new_session(self, cwd: Path) -> str:
        self.request("new", "session/new", {"cwd": str(cwd), "mcpServers": []})
        return str(self.reply("new")["result"]["sessionId"])

    def prompt(self, request_id: Any, session_id: str, text: str) -> None:
        params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        self.request(request_id, "session/prompt", params)

    def reply(self, request_id: Any, timeout: float = 20.0) -> dict[str, Any]:
        """The server's answer to our request `request_id`."""
        return self.wait_for(lambda m: "method" not in m and m.get("id") == request_id, timeout)

    def server_request(self, method: str, timeout: float = 20.0) -> dict[str, Any]:
        """The next request the server sent us with `method` (a permission, an fs call)."""
        return self.wait_for(lambda m: m.get("method") == method and "id" in m, timeout)

    def read(self, timeout: float) -> bool:
        """Read what stdout has within `timeout`; False at its end."""
        assert self.process.stdout is not None
        number = self.process.stdout.fileno()
        ready, _, _ = select.select([number], [], [], timeout)
        if not ready:
            return True
        chunk = os.read(number, 1 << 20)
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        self.messages.extend(strict_json(line) for line in lines)
        return bool(chunk)

    def input_read(self) -> None:
        """Wait until the server has read everything sent to it (its stdin pipe is empty)."""
        assert wait_for(lambda: unread(self.process.stdin) == 0, 20), "the server stopped reading its input"

    def end_input(self) -> None:
        """Close stdin once all of it is read, and wait until the server has read its end (it closes its
        side of the pipe then)."""
        assert self.process.stdin is not None
        self.input_read()
        pipe = f"pipe:[{os.fstat(self.process.stdin.fileno()).st_ino}]"
        self.process.stdin.close()
        if Path("/proc/self/fd").is_dir():
            assert wait_for(lambda: not holds(self.process.pid, pipe), 20), "the server never read its end"

    def finish(self, timeout: float = 90.0) -> int | None:
        """Close stdin and read to the end; the exit status (None: still running after `timeout`, a
        bound for a hung server only: answering a flood of 150,000 requests takes ~30 s under load)."""
        with contextlib.suppress(BrokenPipeError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        deadline = time.monotonic() + timeout
        while self.read(0.1) and time.monotonic() < deadline:
            pass
        try:
            return self.process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return None

    def stderr(self) -> str:
        """What the server wrote to stderr so far (all of it, once its context has ended)."""
        if self._kept is not None:
            return self._kept
        self.stderr_file.seek(0)
        return str(self.stderr_file.read().decode("utf-8", "replace"))

    def wait_for(self, wanted: Callable[[dict[str, Any]], bool], timeout: float = 20.0) -> dict[str, Any]:
        """The first message not taken yet that is `wanted`, read from stdout until it comes."""
        deadline = time.monotonic() + timeout
        while True:
            for index, message in enumerate(self.messages):
                if index not in self._taken and wanted(message):
                    self._taken.add(index)
                    return message
            if time.monotonic() > deadline:
                raise AssertionError(f"no such message in {timeout} s; stderr: {self.stderr()}")
            if not self.read(0.05):
                raise AssertionError(f"stdout ended; stderr: {self.stderr()}")


@contextlib.contextmanager
def raw_server(server: FakeServer, cwd: Path, *args: str) -> Iterator[RawServer]:
    """The server process with piped stdio (stderr to a temp file); killed on leaving if still running."""
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(
            nanohermes_command(server, "acp", *args),
            cwd=cwd,
            env=child_env("sk-acp-raw-0123456789abcdef"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        server = RawServer(process, stderr)
        try:
            yield server
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
            server._kept = server.stderr()  # read before the file goes away
            for pipe in (process.stdin, process.stdout):
                with contextlib.suppress(BrokenPipeError):
                    if pipe is not None:
                        pipe.close()


def clean_exit(server: RawServer) -> None:
    """stdin closed: exit 0 with no traceback, no internal error and no failed turn on stderr."""
    assert server.finish() == 0, server.stderr()
    for problem in ("Traceback", "internal error", "turn failed"):
        assert problem not in server.stderr()
