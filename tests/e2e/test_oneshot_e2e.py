"""End to end: the real `nanohermes -p` console script in a subprocess against the fake loopback
endpoint (real sockets, SSE). HOME and the nanohermes directories come from the autouse fixture."""

from __future__ import annotations

import functools
import json
import os
import signal
import stat
import time
from pathlib import Path
from typing import Any

from cli_process import (
    DISTILL,
    SUMMARY,
    chat_bodies,
    memory_file,
    run_nanohermes,
    sessions_dir,
    started_nanohermes,
)
from fake_server import FakeServer
from fake_server import fake_server as fake_server

KEY = "sk-e2e-SECRET-0123456789abcdef"
nh = functools.partial(run_nanohermes, key=KEY)


def distill_bodies(server: FakeServer) -> list[dict[str, Any]]:
    return [b for b in server.bodies if DISTILL in json.dumps(b)]


def assert_valid_history(messages: list[dict[str, Any]]) -> None:
    index = 1
    while index < len(messages):
        ids = [c["id"] for c in messages[index].get("tool_calls") or ()]
        assert messages[index]["role"] != "tool"
        assert [m.get("tool_call_id") for m in messages[index + 1 : index + 1 + len(ids)]] == ids
        index += 1 + len(ids)


def test_memory_saved_in_one_process_is_injected_in_the_next(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_tool_calls([("memory_save", {"kind": "preference", "text": "Answer in French."})])
    fake_server.push_text("Noted.")
    first = nh(fake_server, workspace, "-p", "From now on, answer in French")
    assert first.returncode == 0, first.stderr
    assert first.stdout == "Noted.\n"
    assert "Answer in French." in memory_file().read_text(encoding="utf-8")
    assert stat.S_IMODE(memory_file().stat().st_mode) == 0o600
    fake_server.push_text("Bonjour !")
    second = nh(fake_server, workspace, "-p", "say hello in French")
    assert second.returncode == 0, second.stderr
    system = chat_bodies(fake_server)[-1]["messages"][0]
    assert system["role"] == "system"
    assert "=== Long-term memory (retrieved from past sessions) ===" in system["content"]
    assert "Answer in French." in system["content"]


def test_a_tool_turn_is_distilled_and_small_talk_is_not(fake_server: FakeServer, workspace: Path) -> None:
    (workspace / "setup.cfg").write_text("[tool:pytest]\n", encoding="utf-8")
    fake_server.push_tool_calls([("list_files", {})])
    fake_server.push_text("There is a setup.cfg.")
    lesson = '[{"kind": "fact", "text": "The project configures pytest in setup.cfg.", "keys": ["config"]}]'
    fake_server.push_text(lesson, match=DISTILL)
    done = nh(fake_server, workspace, "-p", "ls")
    assert done.returncode == 0, done.stderr
    assert "1 memory saved" in done.stderr
    assert len(distill_bodies(fake_server)) == 1
    entries = json.loads(memory_file().read_text(encoding="utf-8"))["entries"]
    assert [(e["text"], e["source"]) for e in entries] == [
        ("The project configures pytest in setup.cfg.", "auto")
    ]
    fake_server.push_text("Hello!")
    hello = nh(fake_server, workspace, "-p", "hi")
    assert hello.returncode == 0, hello.stderr
    assert len(distill_bodies(fake_server)) == 1  # no new distill request for small talk


def test_no_memory_offers_no_memory_tools_and_writes_nothing(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_tool_calls([("memory_save", {"kind": "fact", "text": "x"})])
    fake_server.push_text("Could not save.")
    done = nh(fake_server, workspace, "--no-memory", "-p", "remember that I always want tabs, please")
    assert done.returncode == 0, done.stderr
    offered = {t["function"]["name"] for t in chat_bodies(fake_server)[0]["tools"]}
    assert "read_file" in offered
    assert not offered & {"memory_save", "memory_search", "memory_forget"}
    assert "Long-term memory is off" in chat_bodies(fake_server)[0]["messages"][0]["content"]
    assert distill_bodies(fake_server) == []
    assert not memory_file().exists()


def test_parallel_calls_are_answered_in_call_order_and_json_output(
    fake_server: FakeServer, workspace: Path
) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (workspace / name).write_text(f"content of {name}\n", encoding="utf-8")
    fake_server.push_tool_calls(
        [("read_file", {"path": "c.txt"}), ("read_file", {"path": "a.txt"}), ("read_file", {"path": "b.txt"})]
    )
    fake_server.push_text("Read all three.")
    done = nh(fake_server, workspace, "-p", "read c, a and b", "--json")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["answer"] == "Read all three."
    assert payload["completed"] is True
    assert [c["arguments"]["path"] for c in payload["tool_calls"]] == ["c.txt", "a.txt", "b.txt"]
    assert all(c["ok"] for c in payload["tool_calls"])
    assert payload["usage"]["total_tokens"] == 30
    messages = chat_bodies(fake_server)[1]["messages"]
    results = [m for m in messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in results] == ["call_1", "call_2", "call_3"]
    for result, name in zip(results, ("c.txt", "a.txt", "b.txt"), strict=True):
        assert f"content of {name}" in result["content"]
    assert Path(payload["session"]).parent == sessions_dir()
    assert_valid_history(json.loads(Path(payload["session"]).read_text(encoding="utf-8"))["messages"])


def test_writes_are_refused_without_yes_and_allowed_with_it(fake_server: FakeServer, workspace: Path) -> None:
    fake_server.push_tool_calls([("write_file", {"path": "out.txt", "content": "hi"})])
    fake_server.push_text("I could not write.")
    refused = nh(fake_server, workspace, "-p", "write out.txt")
    assert refused.returncode == 0, refused.stderr
    assert not (workspace / "out.txt").exists()
    result = [m for m in chat_bodies(fake_server)[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert "--yes" in result
    fake_server.push_tool_calls([("write_file", {"path": "out.txt", "content": "hi"})])
    fake_server.push_text("Written.")
    allowed = nh(fake_server, workspace, "--yes", "-p", "write out.txt")
    assert allowed.returncode == 0, allowed.stderr
    assert (workspace / "out.txt").read_text(encoding="utf-8") == "hi"


def test_resume_restores_messages_rebuilds_system_and_never_stores_the_key(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_text("First answer.")
    first = nh(fake_server, workspace, "--session", "work", "-p", f"my key is {KEY}, keep it secret")
    assert first.returncode == 0, first.stderr
    path = sessions_dir() / "work.json"
    text = path.read_text(encoding="utf-8")
    assert KEY not in text
    assert "[redacted]" in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert fake_server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    (workspace / "AGENTS.md").write_text("Project rule: use tabs.", encoding="utf-8")
    fake_server.push_text("Second answer.")
    second = nh(fake_server, workspace, "--continue", "-p", "and now?", stdin=None)
    assert second.returncode == 0, second.stderr
    sent = chat_bodies(fake_server)[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert "Project rule: use tabs." in sent[0]["content"]  # rebuilt from the current configuration
    assert sent[2]["content"] == "First answer."
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved["version"] == 2
    assert [m["content"] for m in saved["messages"][1:]][-2:] == ["and now?", "Second answer."]
    assert KEY not in path.read_text(encoding="utf-8")


def test_compaction_of_a_large_session(fake_server: FakeServer, workspace: Path, tmp_path: Path) -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "stale system prompt"}]
    for n in range(30):
        messages.append({"role": "user", "content": f"step {n}"})
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": f"c{n}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "r" * 500})
        messages.append({"role": "assistant", "content": f"did step {n} " + "d" * 4_000})
    path = tmp_path / "big.json"
    path.write_text(
        json.dumps({"version": 1, "id": "big", "messages": messages, "archive": []}), encoding="utf-8"
    )
    fake_server.push_text("Goal: many steps. Done: 30 steps.", match=SUMMARY)
    fake_server.push_text("Continuing.")
    done = nh(fake_server, workspace, "--session", str(path), "-p", "next step")
    assert done.returncode == 0, done.stderr
    assert "context compacted" in done.stderr
    sent = chat_bodies(fake_server)[0]["messages"]
    assert sum(len(str(m["content"])) for m in messages) > 120_000
    assert sent[0]["role"] == "system"
    assert "stale system prompt" not in sent[0]["content"]
    assert sent[1]["content"].endswith("Goal: many steps. Done: 30 steps.")
    assert sent[-1] == {"role": "user", "content": "next step"}
    assert sent[2:-1] == messages[-9:]  # the last 10 messages, the new user message included
    assert_valid_history(sent)
    saved = json.loads(path.read_text(encoding="utf-8"))
    kept = len(sent) - 3
    assert "archive" not in saved, "a version 1 file is migrated: its archive moves to the sidecar"
    archive = path.with_name(path.stem + ".archive.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in archive] == messages[1 : len(messages) - kept]
    assert saved["archived"] == len(archive)
    assert saved["messages"][1]["content"].startswith("[Summary of the earlier conversation")


def test_ctrl_c_leaves_a_valid_history(fake_server: FakeServer, workspace: Path) -> None:
    fake_server.push_text("word " * 400, delay=0.05)
    with started_nanohermes(fake_server, workspace, "--session", "cut", "-p", "tell me", key=KEY) as process:
        assert fake_server.wait_for_requests(1, timeout=30)
        time.sleep(0.5)  # let a few chunks arrive
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert "interrupted by user" in err
    assert out == ""
    saved = json.loads((sessions_dir() / "cut.json").read_text(encoding="utf-8"))
    last = saved["messages"][-1]
    assert last["role"] == "assistant"
    assert last["content"].startswith("word")
    assert last["content"].endswith("[interrupted by user]")
    assert_valid_history(saved["messages"])
    fake_server.push_text("Resumed fine.")
    again = nh(fake_server, workspace, "--session", "cut", "-p", "go on")
    assert again.returncode == 0, again.stderr
    assert again.stdout == "Resumed fine.\n"


def test_prompt_from_stdin_errors_and_first_run(fake_server: FakeServer, workspace: Path) -> None:
    fake_server.push_text("Got it.")
    piped = nh(fake_server, workspace, "-p", "-", stdin="a prompt from stdin")
    assert piped.returncode == 0, piped.stderr
    assert chat_bodies(fake_server)[0]["messages"][-1]["content"] == "a prompt from stdin"
    empty = nh(fake_server, workspace, "-p", "-", stdin="  \n")
    assert empty.returncode == 2
    assert empty.stderr.strip().startswith("nanohermes: error: the prompt is empty")
    fake_server.push_status(404, {"error": {"message": "The model `fake-model` does not exist"}})
    missing = nh(fake_server, workspace, "-p", "hello")
    assert missing.returncode == 1
    assert len(missing.stderr.strip().splitlines()) == 1
    assert "fake-model" in missing.stderr
    (sessions_dir() / "bad.json").write_text("{oops", encoding="utf-8")
    corrupt = nh(fake_server, workspace, "--session", "bad", "-p", "hello")
    assert corrupt.returncode == 1
    assert "bad.json" in corrupt.stderr
    assert "--session" in corrupt.stderr
    assert (sessions_dir() / "bad.json").read_text(encoding="utf-8") == "{oops"
    first_run = run_nanohermes(None, workspace, "-p", "hi")
    assert first_run.returncode == 2
    for needle in ("NANOHERMES_MODEL", "OpenAI", "DeepSeek", "llama.cpp", "Ollama"):
        assert needle in first_run.stderr


def test_sub_agent_definitions_are_offered_through_the_task_tool(
    fake_server: FakeServer, workspace: Path
) -> None:
    agents = Path(os.environ["HOME"]) / ".nanohermes" / "agents"
    agents.mkdir(parents=True)
    (agents / "poet.md").write_text("---\ndescription: Writes haiku\ntools: read_file\n---\nYou write haiku.")
    fake_server.push_tool_calls([("task", {"agent": "poet", "task": "a haiku about tests"})])
    fake_server.push_text("Green bars at dawn", match="You write haiku.")
    fake_server.push_text("Here is your haiku.")
    done = nh(fake_server, workspace, "-p", "write a haiku")
    assert done.returncode == 0, done.stderr
    task = next(t for t in chat_bodies(fake_server)[0]["tools"] if t["function"]["name"] == "task")
    assert {"general", "explore", "reviewer", "poet"} <= set(
        task["function"]["parameters"]["properties"]["agent"]["enum"]
    )
    sub_request = next(b for b in fake_server.bodies if "You write haiku." in json.dumps(b))
    assert [t["function"]["name"] for t in sub_request["tools"]] == ["read_file"]
    last = chat_bodies(fake_server)[-1]["messages"]
    assert last[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "Green bars at dawn"}


def test_one_shot_loads_no_terminal_library_and_no_httpx_cli(fake_server: FakeServer, tmp_path: Path) -> None:
    """`-p` stays lean (README, Performance): no rich/prompt_toolkit, and not httpx's command-line
    client (click, rich, pygments) though click is installed."""
    import subprocess
    import sys

    fake_server.push_text("Lean.")
    code = (
        "import sys\n"
        "from nanohermes.app.cli import main\n"
        f"code = main(['--base-url', {fake_server.url!r}, '--model', 'm', '-p', 'hi'])\n"
        "heavy = ('rich', 'prompt_toolkit', 'click', 'pygments', 'httpx._main')\n"
        "print(code, sorted(name for name in heavy if name in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.splitlines()[-1] == "0 []", done.stdout + done.stderr
    # the placeholder is gone once httpx is loaded: the real CLI module still imports on demand
    check = (
        "from nanohermes.app.wiring import import_httpx\n"
        "import_httpx()\n"
        "import httpx, httpx._main\n"
        "print(httpx._main.main is not httpx.main)\n"
    )
    real = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, timeout=60, check=True
    )
    assert real.stdout.strip() == "True"


def test_escape_sequences_reach_a_pipe_unchanged_but_never_the_terminal_on_stderr(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_tool_calls([("read_file", {"path": "x\x1b[2K.txt"})])
    fake_server.push_text("done \x1b[31mred\x1b[0m")
    done = nh(fake_server, workspace, "--no-memory", "-p", "read it")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done \x1b[31mred\x1b[0m\n"  # piped: the answer byte for byte
    assert "x\\x1b[2K.txt" in done.stderr
    assert "\x1b" not in done.stderr
    fake_server.push_status(400, {"error": {"message": "bad request \x1b]52;c;ZXZpbA==\x07 here"}})
    failed = nh(fake_server, workspace, "--no-memory", "-p", "again")
    assert failed.returncode == 1
    assert "\\x1b]52;c;ZXZpbA==\\x07" in failed.stderr
    assert "\x1b" not in failed.stderr
    assert "\x07" not in failed.stderr


def test_a_one_shot_run_leaves_its_session_and_no_lock_file(fake_server: FakeServer, workspace: Path) -> None:
    """The session's `.lock` file is removed when the run lets the session go: `sessions/` held a
    `<timestamp>.json.lock` beside every session ever run."""
    fake_server.push_text("hello")
    done = nh(fake_server, workspace, "--no-memory", "-p", "hi")
    assert done.returncode == 0, done.stderr
    names = sorted(path.name for path in sessions_dir().iterdir())
    assert len(names) == 1, names
    assert names[0].endswith(".json")
