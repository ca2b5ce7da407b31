"""The real `nanohermes` console script in a subprocess, for end-to-end tests: one way to build its
command line, run it to the end, or start it and stop it whatever happens. Every run has a timeout."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from fake_server import FakeServer

SCRIPT = Path(sys.executable).with_name("nanohermes")
DISTILL = "durable long-term memories"  # a phrase of the distill system prompt
SUMMARY = "You compress the earlier part"  # a phrase of the compaction summary prompt
SUBCOMMANDS = ("undo", "memory", "mcp", "acp")  # these take the endpoint flags after their name


def nanohermes_command(server: FakeServer | None, *args: str, model: str = "fake-model") -> list[str]:
    """`nanohermes [SUB] --base-url URL --model M ARGS…`, without the endpoint when `server` is None."""
    endpoint = ["--base-url", server.url, "--model", model] if server is not None else []
    if args[:1] and args[0] in SUBCOMMANDS:
        return [str(SCRIPT), args[0], *endpoint, *args[1:]]
    return [str(SCRIPT), *endpoint, *args]


def child_env(key: str | None, env: dict[str, str] | None = None) -> dict[str, str]:
    """The test's environment (or `env`), with NANOHERMES_API_KEY set when `key` is given."""
    base = dict(os.environ if env is None else env)
    return {**base, "NANOHERMES_API_KEY": key} if key is not None else base


def run_nanohermes(
    server: FakeServer | None,
    cwd: Path,
    *args: str,
    key: str | None = None,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 60,
    stdout: int | IO[Any] = subprocess.PIPE,
) -> subprocess.CompletedProcess[str]:
    """Run to the end; stdin is `stdin`, or empty (never the test runner's own); stdout is captured
    unless `stdout` names another target (a closed pipe, /dev/full)."""
    return subprocess.run(
        nanohermes_command(server, *args),
        cwd=cwd,
        env=child_env(key, env),
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
    )


@contextmanager
def started_nanohermes(
    server: FakeServer | None,
    cwd: Path,
    *args: str,
    key: str | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[subprocess.Popen[str]]:
    """Start with piped, line-buffered stdout/stderr; killed and reaped on leaving, whatever happened."""
    process = subprocess.Popen(
        nanohermes_command(server, *args),
        cwd=cwd,
        env=child_env(key, env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def read_line(process: subprocess.Popen[str], timeout: float) -> str:
    """One line of the process's stdout, or "" when none came within `timeout`."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    return process.stdout.readline() if ready else ""


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one `nanohermes: error:` line of a run that failed cleanly (no traceback, no internal error)."""
    lines = [line for line in result.stderr.splitlines() if line.startswith("nanohermes: error: ")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "internal error" not in result.stderr
    return lines[0]


def sessions_dir() -> Path:
    return Path(os.environ["NANOHERMES_SESSIONS_DIR"])


def memory_file() -> Path:
    return Path(os.environ["NANOHERMES_MEMORY_DIR"]) / "memory.json"


def chat_bodies(server: FakeServer) -> list[dict[str, Any]]:
    """The requests of conversation turns: not distillation, not compaction summaries."""
    return [b for b in server.bodies if DISTILL not in json.dumps(b) and SUMMARY not in json.dumps(b)]
