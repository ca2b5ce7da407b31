"""End to end, the real `nanohermes -p` with `[hooks]` in its config file, against the fake endpoint:
a pre_tool hook blocking a call, a post_tool hook given the result, user_prompt, stop and
session_start hooks, a hook that hangs, one that prints megabytes, a bad `[hooks]` table."""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import Any

from cli_process import chat_bodies, one_error_line, run_nanohermes
from fake_server import FakeServer
from fake_server import fake_server as fake_server

nh = functools.partial(run_nanohermes, key="sk-e2e-hooks")


def _config(tmp_path: Path, hooks: str) -> str:
    path = tmp_path / "config.toml"
    path.write_text(f"[hooks]\n{hooks}\n", encoding="utf-8")
    return str(path)


def _tool_message(server: FakeServer) -> dict[str, Any]:
    return next(m for m in chat_bodies(server)[-1]["messages"] if m["role"] == "tool")


def test_a_pre_tool_hook_exiting_2_blocks_the_call_and_the_model_gets_its_reason(
    fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    hooks = """pre_tool = [
  { command = "cat > pre.json; echo 'no shell commands today' >&2; exit 2", matcher = "run_shell" },
  { command = "touch other-tool-hook-ran", matcher = "read_file" },
]"""
    fake_server.push_tool_calls([("run_shell", {"command": "touch made.txt"})])
    fake_server.push_text("Understood.")
    done = nh(fake_server, workspace, "--config", _config(tmp_path, hooks), "--yes", "-p", "make a file")
    assert done.returncode == 0, done.stderr
    assert not (workspace / "made.txt").exists()
    assert not (workspace / "other-tool-hook-ran").exists()  # its matcher does not take run_shell
    result = _tool_message(fake_server)["content"]
    assert result == "ERROR: a pre_tool hook blocked this call: no shell commands today"
    event = json.loads((workspace / "pre.json").read_text(encoding="utf-8"))
    assert event["hook_event_name"] == "pre_tool"
    assert event["tool_name"] == "run_shell"
    assert event["tool_input"] == {"command": "touch made.txt"}
    assert event["cwd"] == str(workspace)
    assert Path(event["transcript_path"]).stem == event["session_id"]


def test_a_post_tool_hook_receives_the_result_and_its_exit_2_reaches_the_model(
    fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "notes.txt").write_text("hello from the notes\n", encoding="utf-8")
    hooks = """post_tool = ["cat > post.json", "echo 'lint: 2 warnings' >&2; exit 2"]"""
    fake_server.push_tool_calls([("read_file", {"path": "notes.txt"})])
    fake_server.push_text("Read it.")
    done = nh(fake_server, workspace, "--config", _config(tmp_path, hooks), "-p", "read notes.txt")
    assert done.returncode == 0, done.stderr
    event = json.loads((workspace / "post.json").read_text(encoding="utf-8"))
    assert event["hook_event_name"] == "post_tool"
    assert event["tool_input"] == {"path": "notes.txt"}
    assert "hello from the notes" in event["tool_response"]
    result = _tool_message(fake_server)["content"]
    assert "hello from the notes" in result
    assert result.endswith("post_tool hook: lint: 2 warnings")


def test_user_prompt_stop_and_session_start_hooks_run_and_verbose_shows_each_run(
    fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    hooks = """user_prompt = ["cat > prompt.json"]
stop = ["cat > stop.json"]
session_start = ["cat > start.json"]"""
    fake_server.push_text("Hi there.")
    done = nh(fake_server, workspace, "--config", _config(tmp_path, hooks), "--verbose", "-p", "hello hooks")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hi there.\n"
    assert json.loads((workspace / "prompt.json").read_text(encoding="utf-8"))["prompt"] == "hello hooks"
    assert json.loads((workspace / "stop.json").read_text(encoding="utf-8"))["last_assistant_message"] == (
        "Hi there."
    )
    assert json.loads((workspace / "start.json").read_text(encoding="utf-8"))["source"] == "startup"
    for event in ("user_prompt", "stop", "session_start"):
        assert f"nanohermes: hook {event} 'cat > " in done.stderr
    assert "exit 0 in" in done.stderr


def test_a_user_prompt_hook_exiting_2_blocks_the_prompt_with_its_reason(
    fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    hooks = """user_prompt = ["echo 'prompts may not mention the secret' >&2; exit 2"]"""
    done = nh(fake_server, workspace, "--config", _config(tmp_path, hooks), "-p", "tell me the secret")
    assert done.returncode == 1
    line = one_error_line(done)
    assert (
        line == "nanohermes: error: prompt blocked by a user_prompt hook: prompts may not mention the secret"
    )
    assert chat_bodies(fake_server) == []  # the model never saw it


def test_a_hook_that_hangs_is_stopped_at_its_timeout_and_the_turn_completes(
    fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    hooks = """pre_tool = [{ command = "sleep 60", timeout = 1 }]
user_prompt = ["exit 1"]"""
    fake_server.push_tool_calls([("list_files", {})])
    fake_server.push_text("Listed.")
    started = time.monotonic()
    done = nh(fake_server, workspace, "--config", _config(tmp_path, hooks), "-p", "list")
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 30
    assert "nanohermes: hook pre_tool 'sleep 60' timed out after 1 s and was stopped" in done.stderr
    assert "nanohermes: hook user_prompt 'exit 1': exit 1 in" in done.stderr  # failed: a note, goes on
    assert done.stdout == "Listed.\n"
    assert "ERROR" not in _tool_message(fake_server)["content"]  # the call itself ran


def test_a_hook_printing_megabytes_is_read_bounded(
    fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    flood = "head -c 20000000 /dev/zero | tr '\\\\0' x"
    hooks = f"""pre_tool = ["{flood}; {flood} >&2; exit 2"]
stop = ["{flood} >&2; exit 3"]"""
    fake_server.push_tool_calls([("list_files", {})])
    fake_server.push_text("Fine.")
    done = nh(fake_server, workspace, "--config", _config(tmp_path, hooks), "-p", "list")
    assert done.returncode == 0, done.stderr
    result = _tool_message(fake_server)["content"]
    assert result.startswith("ERROR: a pre_tool hook blocked this call: xxx")
    assert len(result) <= 20_000  # tool_output_chars
    stop = [line for line in done.stderr.splitlines() if "hook stop" in line]
    assert len(stop) == 1
    assert len(stop[0]) < 400


def test_a_bad_hooks_table_is_one_config_error_naming_the_file_and_line(
    fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    for hooks, problem in [
        ('pre_tool = "./check.sh"', "hooks.pre_tool in {path}, line 2: must be a list of commands"),
        ('before_tool = ["x"]', "hooks in {path}, line 1: unknown hook event 'before_tool'"),
        ('stop = ["  "]', "hooks.stop.0.command in {path}, line 2: a hook's command must not be empty"),
    ]:
        path = _config(tmp_path, hooks)
        done = nh(fake_server, workspace, "--config", path, "-p", "hi")
        assert done.returncode == 2
        assert problem.format(path=path) in one_error_line(done)
    assert fake_server.bodies == []
