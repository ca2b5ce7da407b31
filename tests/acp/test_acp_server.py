"""End to end: the real `nanohermes acp` process, driven by the SDK's client side, against the fake
OpenAI-compatible endpoint (real sockets). HOME and the nanohermes directories are per test."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp_harness import (
    RecordingClient,
    capabilities,
    prompt_once,
    running_server,
    stderr_text,
    streaming_prompt,
)
from cli_process import child_env, nanohermes_command, run_nanohermes
from fake_server import FakeServer
from fake_server import fake_server as fake_server
from mcp_helpers import wait_for

DISTILL = "durable long-term memories"


def run(body: Callable[[], Awaitable[Any]], timeout: float = 60.0) -> Any:
    return asyncio.run(asyncio.wait_for(body(), timeout))


def sessions_dir() -> Path:
    return Path(os.environ["NANOHERMES_SESSIONS_DIR"])


def memory_file() -> Path:
    return Path(os.environ["NANOHERMES_MEMORY_DIR"]) / "memory.json"


def chat_bodies(server: FakeServer) -> list[dict[str, Any]]:
    return [b for b in server.bodies if DISTILL not in json.dumps(b)]


def test_plain_turn_streams_the_answer_and_saves_the_session(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_text(
        "Hello from nanohermes, streamed in pieces.", reasoning="thinking it over", delay=0.02
    )
    client = RecordingClient()

    async def body() -> tuple[Any, Any, str]:
        async with running_server(fake_server.url, client) as (conn, process):
            init = await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            reply = await conn.prompt(session_id=new.session_id, prompt=[text_block("say hello")])
        assert process.returncode == 0, stderr_text(process)
        return init, reply, new.session_id

    init, reply, sid = run(body)
    assert init.protocol_version == 1
    assert init.agent_capabilities.load_session is True
    assert init.agent_capabilities.prompt_capabilities.embedded_context is True
    assert reply.stop_reason == "end_turn"
    assert client.texts(sid) == "Hello from nanohermes, streamed in pieces."
    assert client.texts(sid, "agent_thought_chunk") == "thinking it over"
    assert len(client.of_kind(sid, "agent_message_chunk")) > 1
    commands = client.of_kind(sid, "available_commands_update")
    assert {c.name for c in commands[0].available_commands} == {"compact", "memory", "reset"}
    [info] = client.of_kind(sid, "session_info_update")  # the thread's title, once
    assert info.title == "say hello"
    saved = json.loads((sessions_dir() / f"{sid}.json").read_text())
    assert saved["workspace"] == str(workspace)
    assert [m["role"] for m in saved["messages"]] == ["system", "user", "assistant"]
    assert chat_bodies(fake_server)[0]["messages"][-1]["content"] == "say hello"


def tool_updates(client: RecordingClient, sid: str) -> list[Any]:
    return [
        u for s, u in client.updates if s == sid and u.session_update in ("tool_call", "tool_call_update")
    ]


@pytest.mark.parametrize("choice", ["allow_once", "allow_always"])
def test_write_asks_permission_and_writes_when_allowed(
    fake_server: FakeServer, workspace: Path, choice: str
) -> None:
    fake_server.push_tool_calls([("write_file", {"path": "notes/out.txt", "content": "hello\n"})])
    fake_server.push_text("Written.")
    client = RecordingClient(choice)
    sid, reply = prompt_once(fake_server.url, client, workspace, "write the note")
    assert reply.stop_reason == "end_turn"
    assert (workspace / "notes" / "out.txt").read_text() == "hello\n"
    [asked] = client.permission_requests
    assert {o.kind for o in asked.options} == {"allow_once", "allow_always", "reject_once", "reject_always"}
    first, *_, last = tool_updates(client, sid)
    assert first.session_update == "tool_call"
    assert first.kind == "edit"
    assert first.status == "pending"
    assert first.locations[0].path == str(workspace / "notes" / "out.txt")
    assert first.content[0].type == "diff"
    assert first.content[0].new_text == "hello\n"
    assert asked.tool_call.tool_call_id == first.tool_call_id
    assert last.status == "completed"
    assert last.tool_call_id == first.tool_call_id


def test_a_plan_reaches_the_client_as_plan_updates(fake_server: FakeServer, workspace: Path) -> None:
    steps = [{"step": "read the code", "status": "completed"}, {"step": "fix it", "status": "in_progress"}]
    fake_server.push_tool_calls([("update_plan", {"plan": steps})])
    fake_server.push_tool_calls([("update_plan", {"plan": [{"step": "x", "status": "done"}]})])
    fake_server.push_text("Planned.")
    client = RecordingClient()
    sid, reply = prompt_once(fake_server.url, client, workspace, "plan it")
    assert reply.stop_reason == "end_turn"
    [plan] = client.of_kind(sid, "plan")  # the refused second update sent none
    assert [(e.content, e.status, e.priority) for e in plan.entries] == [
        ("read the code", "completed", "medium"),
        ("fix it", "in_progress", "medium"),
    ]
    assert [u.status for u in tool_updates(client, sid)][-1] == "failed"


@pytest.mark.parametrize("choice", ["reject_once", "reject_always", "cancelled"])
def test_write_refused_writes_nothing(fake_server: FakeServer, workspace: Path, choice: str) -> None:
    fake_server.push_tool_calls([("write_file", {"path": "out.txt", "content": "nope\n"})])
    fake_server.push_text("Understood, not written.")
    client = RecordingClient(choice)
    sid, reply = prompt_once(fake_server.url, client, workspace, "write it")
    assert reply.stop_reason == "end_turn"
    assert not (workspace / "out.txt").exists()
    assert tool_updates(client, sid)[-1].status == "failed"
    tool_result = chat_bodies(fake_server)[1]["messages"][-1]
    assert tool_result["role"] == "tool"
    assert "refused" in tool_result["content"]


def test_set_mode_read_only_and_auto(fake_server: FakeServer, workspace: Path) -> None:
    fake_server.push_text("Reading only.")
    fake_server.push_tool_calls([("write_file", {"path": "auto.txt", "content": "x"})])
    fake_server.push_text("Done without asking.")
    client = RecordingClient("reject_once")

    async def body() -> Any:
        async with running_server(fake_server.url, client) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            assert new.modes.current_mode_id == "ask"
            assert [m.id for m in new.modes.available_modes] == ["read-only", "ask", "auto"]
            await conn.set_session_mode(session_id=new.session_id, mode_id="read-only")
            await conn.prompt(session_id=new.session_id, prompt=[text_block("look around")])
            await conn.set_session_mode(session_id=new.session_id, mode_id="auto")
            return await conn.prompt(session_id=new.session_id, prompt=[text_block("write auto.txt")])

    assert run(body).stop_reason == "end_turn"
    offered = {t["function"]["name"] for t in chat_bodies(fake_server)[0]["tools"]}
    assert "read_file" in offered
    assert not offered & {"write_file", "edit_file", "run_shell"}
    assert (workspace / "auto.txt").read_text() == "x"
    assert client.permission_requests == []


def test_file_tools_go_through_the_client_when_it_offers_fs(fake_server: FakeServer, workspace: Path) -> None:
    buffer = str(workspace / "main.py")
    fake_server.push_tool_calls([("read_file", {"path": "main.py"})])
    fake_server.push_tool_calls([("edit_file", {"path": "main.py", "old": "print(1)", "new": "print(2)"})])
    fake_server.push_text("Edited.")
    client = RecordingClient("allow_once", fs=True)
    client.files[buffer] = "print(1)  # unsaved buffer\n"

    async def body() -> str:
        async with running_server(fake_server.url, client) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(True))
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=new.session_id, prompt=[text_block("edit main.py")])
        return new.session_id

    run(body)
    assert client.files[buffer] == "print(2)  # unsaved buffer\n"
    assert not (workspace / "main.py").exists()
    read_result = chat_bodies(fake_server)[1]["messages"][-1]["content"]
    assert "unsaved buffer" in read_result
    assert ("write", buffer) in client.fs_calls


def test_cancel_mid_stream_answers_cancelled_fast_and_the_session_goes_on(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_text("word " * 400, delay=0.05, match="talk a lot")
    fake_server.push_text("other " * 30, delay=0.05, match="meanwhile")
    fake_server.push_text("Back again.", match="still there?")
    client = RecordingClient()

    async def body() -> tuple[str, str, Any, float, Any, Any]:
        async with running_server(fake_server.url, client) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            other = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            task = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("talk a lot")]))
            bystander = asyncio.ensure_future(conn.prompt(session_id=other, prompt=[text_block("meanwhile")]))
            while not client.texts(sid) or not client.texts(other):
                await asyncio.sleep(0.02)
            started = time.monotonic()
            await conn.cancel(session_id=sid)
            reply = await task
            elapsed = time.monotonic() - started
            again = await conn.prompt(session_id=sid, prompt=[text_block("still there?")])
            return sid, other, reply, elapsed, again, await bystander

    sid, other, reply, elapsed, again, bystander = run(body)
    assert reply.stop_reason == "cancelled"
    assert elapsed < 2.0
    assert again.stop_reason == "end_turn"
    assert bystander.stop_reason == "end_turn"  # the other session was not touched
    assert client.texts(other) == "other " * 30
    history = [b for b in chat_bodies(fake_server) if "still there?" in json.dumps(b)][-1]["messages"]
    assert "interrupted" in history[-2]["content"]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc to see process groups")
def test_cancel_kills_the_shell_process_group(
    fake_server: FakeServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NANOHERMES_SANDBOX", "off")  # `$$` in bwrap's pid namespace is not the host's pid
    fake_server.push_tool_calls([("run_shell", {"command": "echo $$ > shell.pid; sleep 30 & sleep 30"})])
    fake_server.push_text("after")
    client = RecordingClient()

    async def body() -> tuple[Any, float, int]:
        async with running_server(fake_server.url, client, "--permission", "auto") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            task = asyncio.ensure_future(
                conn.prompt(session_id=new.session_id, prompt=[text_block("run it")])
            )
            pid_file = workspace / "shell.pid"
            while not pid_file.exists() or not pid_file.read_text().strip():
                await asyncio.sleep(0.02)
            pgid = int(pid_file.read_text())
            while len(living_members(pgid)) < 2:  # the shell (or the sleep it became) and `sleep 30 &`
                await asyncio.sleep(0.02)
            started = time.monotonic()
            await conn.cancel(session_id=new.session_id)
            reply = await task
            return reply, time.monotonic() - started, pgid

    reply, elapsed, pgid = run(body)
    assert reply.stop_reason == "cancelled"
    assert elapsed < 2.0
    assert wait_for(lambda: living_members(pgid) == [], 5)  # killed: each is gone once it has run


def living_members(pgid: int) -> list[int]:
    """Processes of group `pgid` that are not zombies (an orphan may wait for its reaper a while)."""
    living = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            living.append(int(entry.name))
    return living


def distilled(kind: str, text: str) -> str:
    return json.dumps([{"kind": kind, "text": text}])


def memory_texts() -> list[str]:
    if not memory_file().exists():
        return []
    return [entry["text"] for entry in json.loads(memory_file().read_text())["entries"]]


def test_a_preference_learnt_in_one_session_shapes_the_next_turn_of_another(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_text("Noted: tabs.", match="remember that I prefer tabs")
    fake_server.push_text(
        distilled("preference", "The user prefers tabs over spaces for indentation"), match=DISTILL
    )
    fake_server.push_text("Use tabs.", match="tabs or spaces")
    client = RecordingClient()

    async def body() -> None:
        async with running_server(fake_server.url, client) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            first = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            second = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=first.session_id, prompt=[text_block("remember that I prefer tabs")])
            deadline = time.monotonic() + 10
            while not memory_texts() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            await conn.prompt(
                session_id=second.session_id, prompt=[text_block("tabs or spaces for indentation?")]
            )

    run(body)
    assert memory_texts() == ["The user prefers tabs over spaces for indentation"]
    last = [b for b in chat_bodies(fake_server) if "tabs or spaces" in json.dumps(b)][-1]
    assert "prefers tabs over spaces" in last["messages"][0]["content"]


WORDS = ["quokka", "narwhal", "axolotl", "pangolin", "okapi", "tapir", "wombat", "capybara"]


def test_eight_sessions_prompting_at_once_all_complete_and_no_memory_is_lost(
    fake_server: FakeServer, workspace: Path
) -> None:
    for number, word in enumerate(WORDS):
        fake_server.push_text(f"answer {number} " * 20, delay=0.01, match=f"task {number}:")
        fake_server.push_text(
            distilled("fact", f"Project uses the {word} build tool"), match=f"task {number}:"
        )
    client = RecordingClient()

    async def body() -> list[Any]:
        async with running_server(fake_server.url, client) as (conn, process):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            news = [await conn.new_session(cwd=str(workspace), mcp_servers=[]) for _ in WORDS]
            prompts = [
                conn.prompt(
                    session_id=n.session_id, prompt=[text_block(f"task {i}: remember the build tool")]
                )
                for i, n in enumerate(news)
            ]
            replies = await asyncio.gather(*prompts)
        assert process.returncode == 0, stderr_text(process)
        return replies

    replies = run(body, timeout=90)
    assert [r.stop_reason for r in replies] == ["end_turn"] * len(WORDS)
    texts = memory_texts()  # the server waited for every distillation before exiting
    assert sorted(texts) == sorted(f"Project uses the {word} build tool" for word in WORDS)


def test_model_error_ends_that_prompt_with_a_clear_message_and_the_server_keeps_serving(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_status(401, {"error": {"message": "invalid api key"}})
    fake_server.push_text("Recovered.")
    client = RecordingClient()

    async def body() -> tuple[str, Any]:
        async with running_server(fake_server.url, client) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            with pytest.raises(RequestError) as failure:
                await conn.prompt(session_id=new.session_id, prompt=[text_block("hi")])
            again = await conn.prompt(session_id=new.session_id, prompt=[text_block("hi again")])
        return str(failure.value), again

    message, again = run(body)
    assert "401" in message or "key" in message.lower()
    assert again.stop_reason == "end_turn"


def test_slash_commands_reset_and_memory(fake_server: FakeServer, workspace: Path) -> None:
    fake_server.push_text("First answer.")
    client = RecordingClient()

    async def body() -> str:
        async with running_server(fake_server.url, client) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = new.session_id
            await conn.prompt(session_id=sid, prompt=[text_block("hello")])
            await conn.prompt(session_id=sid, prompt=[text_block("/memory stats")])
            await conn.prompt(session_id=sid, prompt=[text_block("/reset")])
        return sid

    sid = run(body)
    said = client.texts(sid)
    assert "0 memories" in said
    assert "Conversation cleared" in said
    assert len(chat_bodies(fake_server)) == 1
    saved = json.loads((sessions_dir() / f"{sid}.json").read_text())
    assert [m["role"] for m in saved["messages"]] == ["system"]


def test_load_after_restart_replays_history_and_list_shows_the_session(
    fake_server: FakeServer, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    fake_server.push_tool_calls([("read_file", {"path": "a.txt"})])
    fake_server.push_text("The file says alpha.")
    fake_server.push_text("Still here.", match="and now?")
    first_client, second_client = RecordingClient(), RecordingClient()

    async def first() -> str:
        async with running_server(fake_server.url, first_client) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=new.session_id, prompt=[text_block("what is in a.txt?")])
        return new.session_id

    async def second(sid: str) -> tuple[Any, Any]:
        async with running_server(fake_server.url, second_client) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            listed = await conn.list_sessions(cwd=str(workspace))
            await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            reply = await conn.prompt(session_id=sid, prompt=[text_block("and now?")])
        return listed, reply

    sid = run(first)
    listed, reply = run(lambda: second(sid))
    assert [(s.session_id, s.title) for s in listed.sessions] == [(sid, "what is in a.txt?")]
    kinds = [u.session_update for s, u in second_client.updates if s == sid]
    replayed = kinds[: kinds.index("available_commands_update")]
    assert replayed == ["user_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk"]
    assert second_client.texts(sid, "user_message_chunk") == "what is in a.txt?"
    assert second_client.texts(sid).startswith("The file says alpha.")
    assert reply.stop_reason == "end_turn"
    history = chat_bodies(fake_server)[-1]["messages"]
    assert [m["role"] for m in history] == ["system", "user", "assistant", "tool", "assistant", "user"]


def test_bad_input_gets_json_rpc_errors_and_the_server_keeps_serving(
    fake_server: FakeServer, workspace: Path
) -> None:
    import subprocess

    from acp_harness import KEY, SCRIPT

    def request(number: int | None, method: Any, **params: Any) -> str:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        return json.dumps(message if number is None else {**message, "id": number})

    lines = [
        "this is not json",
        "[1, 2, 3]",
        '"just a string"',
        request(1, "no/such/method"),
        request(2, "initialize"),
        request(3, "initialize", protocolVersion=1),
        request(4, "session/new", cwd="relative/dir", mcpServers=[]),
        request(5, "session/prompt", sessionId="nope", prompt=[]),
        request(6, "session/load", sessionId="../../etc/passwd", cwd=str(workspace), mcpServers=[]),
        request(None, "session/cancel", sessionId="nope"),
        request(7, 42),
        request(8, "session/new", cwd=str(workspace), mcpServers=[]),
    ]
    env = {**os.environ, "NANOHERMES_API_KEY": KEY}
    command = [str(SCRIPT), "acp", "--base-url", fake_server.url, "--model", "fake-model"]
    done = subprocess.run(
        command,
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=workspace,
    )
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]  # stdout: protocol only
    errors = {r.get("id"): r["error"]["code"] for r in replies if "error" in r}
    by_id = {r["id"]: r for r in replies if r.get("id") is not None}
    assert [r["error"]["code"] for r in replies if r.get("id") is None] == [-32700, -32600, -32600]
    assert errors[1] == -32601
    assert errors[2] == -32602
    assert by_id[3]["result"]["protocolVersion"] == 1
    assert errors[4] == -32602
    assert "absolute" in by_id[4]["error"]["message"]
    assert errors[5] == -32602
    assert errors[6] == -32602
    assert errors[7] == -32600
    assert by_id[8]["result"]["sessionId"]
    assert "Traceback" not in done.stderr


def test_the_terminal_resumes_an_editor_session_and_never_while_the_editor_holds_it(
    fake_server: FakeServer, workspace: Path
) -> None:
    import subprocess

    from acp_harness import KEY, SCRIPT

    fake_server.push_text("Answer in the editor.", match="asked in the editor")
    client = RecordingClient()
    env = {**os.environ, "NANOHERMES_API_KEY": KEY}

    def terminal(sid: str) -> subprocess.CompletedProcess[str]:
        command = [
            str(SCRIPT),
            "--base-url",
            fake_server.url,
            "--model",
            "m",
            "--session",
            sid,
            "-p",
            "go on",
        ]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, env=env, cwd=workspace)

    async def body() -> tuple[str, Any]:
        async with running_server(fake_server.url, client) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=new.session_id, prompt=[text_block("asked in the editor")])
            busy = await asyncio.to_thread(terminal, new.session_id)
        return new.session_id, busy

    sid, busy = run(body)
    assert busy.returncode == 2
    assert "in use" in busy.stderr
    resumed = terminal(sid)
    assert resumed.returncode == 0, resumed.stderr
    history = chat_bodies(fake_server)[-1]["messages"]
    assert [m["content"] for m in history[1:4]] == ["asked in the editor", "Answer in the editor.", "go on"]


def test_a_second_prompt_while_one_runs_in_the_same_session_is_refused(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_text("slow " * 20, delay=0.05, match="first")
    client = RecordingClient()

    async def body() -> tuple[Any, str]:
        async with running_server(fake_server.url, client) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(False))
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            first = await streaming_prompt(conn, client, sid, "first")
            with pytest.raises(RequestError) as refused:
                await conn.prompt(session_id=sid, prompt=[text_block("second")])
            return await first, str(refused.value.data)

    first, refused = run(body)
    assert first.stop_reason == "end_turn"
    assert "already running a prompt" in refused
    assert client.texts(next(s for s, _ in client.updates)) == "slow " * 20


@pytest.mark.timeout(60)
def test_stdin_or_stdout_on_dev_null_ends_like_any_eof(fake_server: FakeServer, workspace: Path) -> None:
    # /dev/null is a character device: asyncio takes it for a pipe, but epoll refuses to watch it
    silent = run_nanohermes(fake_server, workspace, "acp", key="sk-acp", timeout=20)  # stdin: /dev/null
    assert silent.returncode == 0, silent.stderr
    assert silent.stdout == ""
    assert "Traceback" not in silent.stderr
    assert "Operation not permitted" not in silent.stderr
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    unheard = subprocess.run(
        nanohermes_command(fake_server, "acp"), input=init + "\n", stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, timeout=20, env=child_env("sk-acp"), cwd=workspace,
    )  # fmt: skip
    assert unheard.returncode == 0, unheard.stderr
    assert "Traceback" not in unheard.stderr
