"""--local against a hostile machine: a server flooding its output, a full disk for its log, another
process answering on the server's port, a link planted where the fallback log goes, --model given
with --local. The fake server script is started exactly like llama_cpp.server."""

from __future__ import annotations

import http.server
import os
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nanohermes.core.errors import EndpointUnreachable
from nanohermes.local.server import MODEL_NAME, ServerProcess, serve
from nanohermes.local.watch import LOG_HEAD_BYTES, TAIL_BYTES

FAKE = Path(__file__).with_name("fake_model_server.py")
REPO = Path(__file__).resolve().parents[2]
linux_only = pytest.mark.skipif(sys.platform != "linux", reason="needs Linux (/proc, /dev/full)")


def _factory(tmp_path: Path, mode: str = "ok", flood_mb: int = 0) -> Callable[[int], list[str]]:
    def build(port: int) -> list[str]:
        pidfile = str(tmp_path / "pid")
        return [sys.executable, str(FAKE), "--port", str(port), "--pidfile", pidfile, "--mode", mode] + (
            ["--flood", str(flood_mb)] if flood_mb else []
        )

    return build


def test_a_flooding_server_fills_neither_the_disk_nor_its_pipe(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    with serve(_factory(tmp_path, flood_mb=6), log_dir=logs, model="fake", keep_log=True, timeout=60) as ep:
        pass
    size = ep.log_path.stat().st_size
    assert size < LOG_HEAD_BYTES + TAIL_BYTES + 200, f"6 MB of output made a {size:,}-byte log"
    text = ep.log_path.read_text()
    assert text.startswith("noise noise")
    assert "bytes of output left out; the last 8,192:" in text
    assert "listening on" in text.rsplit("left out", 1)[1], "the end of the output is kept"


def test_the_last_words_of_a_flooding_server_that_dies_are_in_the_error(tmp_path: Path) -> None:
    with (
        pytest.raises(EndpointUnreachable, match="exited with code 3 before answering: .*bad magic") as err,
        serve(_factory(tmp_path, "die", flood_mb=3), log_dir=tmp_path, model="fake", timeout=60),
    ):
        pytest.fail("must not get here")
    assert len(err.value.one_line()) < 1000, "a line of 1,000 characters of noise is cut short"


_FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from nanohermes.local.server import ServerProcess, free_port
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), like ENOSPC
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))  # for the server too
tmp, fake = Path(sys.argv[1]), sys.argv[2]
port = free_port()
server = ServerProcess([sys.executable, fake, "--port", str(port), "--pidfile", str(tmp / "pid"),
                        "--flood", "2"], port, tmp / "server.log")
try:
    server.wait_ready(60)
    print(server.exit_code(), server.log_tail())
finally:
    server.stop()
"""


@linux_only
def test_a_full_disk_under_the_log_stops_neither_the_server_nor_its_output(tmp_path: Path) -> None:
    command = [sys.executable, "-c", _FULL_DISK, str(tmp_path), str(FAKE)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=90, cwd=REPO)
    assert result.returncode == 0, result.stderr[-500:]
    assert result.stdout.startswith("None "), "the server kept running"
    assert "listening on" in result.stdout
    assert (tmp_path / "server.log").stat().st_size <= 100_000


@pytest.fixture
def impostor() -> Iterator[int]:
    """Another process's HTTP server on loopback that answers every GET with 200: its port."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self.send_response(200)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            del format, args

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


@linux_only
def test_another_process_answering_on_the_port_is_not_taken_for_the_server(
    tmp_path: Path, impostor: int
) -> None:
    """The port is taken between `free_port` and the server's bind (the model loads meanwhile): the
    answers of whoever took it are not the server's; ours fails to bind and is started again."""
    ports: list[int] = []

    def factory(port: int) -> list[str]:
        ports.append(impostor if not ports else port)
        return _factory(tmp_path)(ports[-1])

    with serve(factory, log_dir=tmp_path, model="fake", timeout=60) as endpoint:
        assert len(ports) == 2, "the other process's answer was taken for the server's"
        assert endpoint.base_url == f"http://127.0.0.1:{ports[1]}/v1"
        assert int((tmp_path / "pid").read_text()) == endpoint.pid


@linux_only
def test_a_port_another_process_answers_times_out_saying_so(tmp_path: Path, impostor: int) -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]  # never binds the port
    server = ServerProcess(sleeper, impostor, tmp_path / "log")
    try:
        with pytest.raises(EndpointUnreachable, match=f"2 s: another process answers on port {impostor}"):
            server.wait_ready(2)
    finally:
        server.stop()


def test_the_fallback_log_in_the_temporary_directory_follows_no_planted_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Home unwritable: the log goes to the shared temporary directory, where another user may have
    put a link at the name it would have (the pid is easy to guess)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / f"nanohermes-local-server-{os.getpid()}.log").symlink_to(victim)
    (tmp_path / "home-file").write_text("")
    unwritable = tmp_path / "home-file" / "logs"
    with serve(_factory(tmp_path), log_dir=unwritable, model="fake", keep_log=True) as ep:
        pass
    assert victim.read_text() == "precious\n"
    assert ep.log_path.parent == tmp_path
    assert not ep.log_path.is_symlink()
    assert "listening on" in ep.log_path.read_text()
    assert stat.S_IMODE(ep.log_path.stat().st_mode) == 0o600, "the log may hold prompts: only ours to read"


def test_local_with_model_is_one_line_not_a_silently_ignored_flag(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    args = ["--local", "--model", "qwen", "-p", "hi"]
    code = f"from nanohermes.app.cli import main; raise SystemExit(main({args!r}))"
    command = [sys.executable, "-c", code]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert result.returncode == 2
    line = f"nanohermes: error: --local serves its bundled model {MODEL_NAME} (drop --model)\n"
    assert result.stderr == line
    assert result.stdout == ""


def test_server_logs_left_by_earlier_runs_do_not_pile_up(tmp_path: Path) -> None:
    """Logs of crashed or --verbose runs stayed in ~/.nanohermes/logs for ever: the 20 newest stay."""
    from nanohermes.local.server import KEPT_LOGS, _log_path

    logs = tmp_path / "logs"
    logs.mkdir()
    for number in range(KEPT_LOGS + 15):
        old = logs / f"local-server-{100_000 + number}.log"
        old.write_text("old run\n")
        os.utime(old, (1_000_000 + number, 1_000_000 + number))
    other = logs / "notes.txt"
    other.write_text("not a server log\n")
    fresh = _log_path(logs)
    left = sorted(path.name for path in logs.glob("local-server-*.log") if path != fresh)
    assert left == [f"local-server-{100_000 + number}.log" for number in range(15, KEPT_LOGS + 15)]
    assert other.exists()
    assert fresh.exists()
