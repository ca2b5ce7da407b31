"""End-to-end through the real bundled model: `nanohermes --local -p …` against llama-cpp-python + SmolLM2.

Opt-in (`pytest -m local_model` or NANOHERMES_LOCAL_TESTS=1; see conftest.py), skipped with a reason
when the extra 'local' is missing. A 135M-parameter model writes whatever it likes, so these tests
check what nanohermes must guarantee whatever the model writes: a clean exit, no traceback, no hang,
no half-received tool call executed, and a distillation reply that goes to the real server and is
parsed without error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nanohermes.core.events import Retrying
from nanohermes.core.types import ChatResult
from nanohermes.llm import ChatClient
from nanohermes.local.server import MODEL_NAME, find_model_file, serve, server_command

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(400)]
RUN_LIMIT = 360.0  # a runaway small model can fill its whole 8k context before it stops
README = "# Demo project\n\nThe secret word is banana.\n"


def _nanohermes(workspace: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "nanohermes", "--local", *args],
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT,
        cwd=workspace,
        env={**os.environ, **(env or {})},
        check=False,
    )
    print(f"nanohermes {' '.join(args)}: exit {result.returncode} in {time.monotonic() - started:.1f} s")
    print("stderr:", result.stderr[-2000:])
    return result.returncode, result.stdout, result.stderr


def _assert_clean(code: int, stderr: str) -> None:
    assert "Traceback" not in stderr
    assert "internal error" not in stderr
    if code != 0:
        errors = [line for line in stderr.splitlines() if line.startswith("nanohermes: error:")]
        assert len(errors) == 1, stderr


def _server_logs(home: Path) -> list[Path]:
    return sorted((home / ".nanohermes" / "logs").glob("local-server-*.log"))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text(README)
    return root


def test_plain_answer(workspace: Path) -> None:
    code, out, err = _nanohermes(workspace, "--json", "-p", "Say hello in one short sentence.")
    _assert_clean(code, err)
    assert code == 0
    payload = json.loads(out)
    assert payload["completed"] is True
    assert payload["answer"].strip()
    assert payload["error"] is None


def test_tool_turn_never_crashes_hangs_or_runs_a_partial_call(workspace: Path) -> None:
    code, out, err = _nanohermes(
        workspace,
        "--json",
        "-p",
        "Use the read_file tool to read README.md, then tell me the secret word.",
        env={"NANOHERMES_MAX_ITERATIONS": "3"},
    )
    _assert_clean(code, err)
    assert code in (0, 1)
    payload = json.loads(out)
    for call in payload["tool_calls"]:  # whatever the model chose, every executed call was whole
        if "arguments" in call:
            assert isinstance(call["arguments"], dict), call
        assert "ok" in call, f"a tool call without a result: {call}"
    assert (workspace / "README.md").read_text() == README, "a read-only turn changed the workspace"


def test_distillation_goes_to_the_real_server_and_parses(workspace: Path, isolated_home: Path) -> None:
    code, out, err = _nanohermes(
        workspace,
        "--verbose",
        "-p",
        "Remember this: I always prefer tabs over spaces when I write Python code.",
    )
    _assert_clean(code, err)
    assert code == 0
    assert out.strip()
    assert "distillation failed" not in err
    assert "distillation found nothing durable" in err or "saved" in err
    logs = _server_logs(isolated_home)
    assert len(logs) == 1, "--verbose keeps the server log"
    assert f"log {logs[0]})" in err, "--verbose says where the server and its log are"
    posts = logs[0].read_text(errors="replace").count('"POST /v1/chat/completions HTTP/1.1" 200')
    assert posts >= 2, "the turn and its distillation both went to the local server"
    memory = isolated_home / ".nanohermes" / "memory.json"
    if memory.exists():
        json.loads(memory.read_text())
    listing = subprocess.run(
        [sys.executable, "-m", "nanohermes", "memory", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert listing.returncode == 0, listing.stderr


_READ_FILE: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file from the workspace",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
}


def test_client_recovers_when_the_server_ends_a_tool_stream_silently(isolated_home: Path) -> None:
    """With tools and tool_choice auto, llama-cpp-python answers 200 text/event-stream with an empty
    body when the model picks a tool ("Automatic streaming tool choice is not supported"). The client
    must not trust that stream, retry without streaming, and return complete calls."""
    messages: list[Any] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Read README.md"},
    ]
    # llama-cpp-python's tool-calling template (not --local's: with it the model calls a tool every time).
    model_file = find_model_file()
    with serve(
        lambda port: [*server_command(model_file, port), "--chat_format", "chatml-function-calling"],
        log_dir=isolated_home / ".nanohermes" / "logs",
        model=MODEL_NAME,
    ) as endpoint:
        client = ChatClient(base_url=endpoint.base_url, model=MODEL_NAME)
        try:
            items = list(client.stream(messages, [_READ_FILE]))
        finally:
            client.close()
    result = items[-1]
    assert isinstance(result, ChatResult)
    # This model always picks a tool here; the stream then ends with an empty body (no [DONE]).
    assert result.tool_calls, "expected a tool call from the non-streaming retry"
    assert any(isinstance(item, Retrying) for item in items), "the silent end must trigger the retry"
    for call in result.tool_calls:
        assert call.name == "read_file"
        assert isinstance(json.loads(call.arguments), dict)
        assert call.id
