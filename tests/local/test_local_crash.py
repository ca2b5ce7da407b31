"""The --local server dying mid-session: the next request says so — with the exit code and the log —
at once, instead of «cannot reach … connection refused» after every retry; the log is kept."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from nanohermes.agent.loop import Agent
from nanohermes.config.settings import Settings
from nanohermes.core.errors import ServerStopped
from nanohermes.core.events import Note, TurnFinished
from nanohermes.llm import ChatClient
from nanohermes.local.server import LocalEndpoint, serve
from nanohermes.sessions.store import SessionFile
from nanohermes.tools.runner import ToolRunner

FAKE = Path(__file__).with_name("fake_model_server.py")


def _factory(tmp_path: Path) -> Callable[[int], list[str]]:
    def build(port: int) -> list[str]:
        return [sys.executable, str(FAKE), "--port", str(port), "--pidfile", str(tmp_path / "pid")]

    return build


def _kill(endpoint: LocalEndpoint) -> None:
    os.kill(endpoint.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while endpoint.exit_code() is None:
        assert time.monotonic() < deadline, "the killed server did not exit"
        time.sleep(0.02)


def _client(endpoint: LocalEndpoint, waits: list[float]) -> ChatClient:
    def sleep(seconds: float, cancel: object) -> bool:
        waits.append(seconds)
        return False

    return ChatClient(base_url=endpoint.base_url, model=endpoint.model, stopped=endpoint.stopped, sleep=sleep)


def test_a_dead_local_server_is_named_at_once_with_its_exit_code_and_log(tmp_path: Path) -> None:
    waits: list[float] = []
    with serve(_factory(tmp_path), log_dir=tmp_path / "logs", model="fake") as endpoint:
        client = _client(endpoint, waits)
        first = list(client.stream([{"role": "user", "content": "ping"}]))
        assert first[-1].content == "pong"  # type: ignore[union-attr]
        _kill(endpoint)
        try:
            list(client.stream([{"role": "user", "content": "ping"}]))
        except ServerStopped as err:
            line = err.one_line()
        else:
            raise AssertionError("no error after the server died")
        finally:
            client.close()
    assert f"the local model server stopped (killed by signal 9); its log: {endpoint.log_path}" in line
    assert "restart nanohermes --local" in line
    assert waits == [], "a dead server is not retried"
    assert endpoint.log_path.exists(), "the log of a server that crashed is kept"


def test_the_agent_turn_after_the_crash_ends_with_that_line(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with serve(_factory(tmp_path), log_dir=tmp_path / "logs", model="fake") as endpoint:
        client = _client(endpoint, [])
        runner = ToolRunner(workspace, permission="auto", approver=None, store=None)
        session = SessionFile(tmp_path / "s.json")
        agent = Agent(client, runner, Settings(model="fake"), "S", session=session)
        try:
            assert [e for e in agent.run("ping") if isinstance(e, TurnFinished)][0].completed
            _kill(endpoint)
            events = list(agent.run("ping again"))
        finally:
            client.close()
    finished = [e for e in events if isinstance(e, TurnFinished)][0]
    assert not finished.completed
    errors = [e.text for e in events if isinstance(e, Note) and e.level == "error"]
    assert len(errors) == 1
    assert errors[0].startswith("the local model server stopped (killed by signal 9)")
    assert agent.messages[-1] == {"role": "user", "content": "ping again"}  # the message is kept
    assert agent.flush(10)


def test_a_nonzero_exit_is_named_as_an_exit_code(tmp_path: Path) -> None:
    endpoint = LocalEndpoint("http://127.0.0.1:1/v1", "m", tmp_path / "x.log", 1, exit_code=lambda: 3)
    assert (
        endpoint.stopped() == f"the local model server stopped (exit code 3); its log: {tmp_path / 'x.log'}"
    )
    assert LocalEndpoint("http://127.0.0.1:1/v1", "m", tmp_path / "x.log", 1).stopped() is None
