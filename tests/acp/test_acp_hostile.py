"""A buggy or hostile ACP client: every bad input gets a JSON-RPC error or a one-line notice, and
the server neither crashes nor hangs nor loses what it holds (the real process, raw bytes)."""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_process import chat_bodies, sessions_dir
from fake_server import FakeServer
from fake_server import fake_server as fake_server
from mcp_helpers import wait_for
from raw_client import RawServer, clean_exit, raw_server, unread


def test_json_nested_past_the_parsers_limit_is_a_parse_error(
    fake_server: FakeServer, workspace: Path
) -> None:
    with raw_server(fake_server, workspace) as server:
        server.send(b"[" * 100_000 + b"]" * 100_000 + b"\n")
        deep = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":' + b'{"a":' * 5000 + b"1"
        server.send(deep + b"}" * 5001 + b"\n")
        assert server.initialize()["result"]["protocolVersion"] == 1  # still serving
        clean_exit(server)
    errors = [m["error"] for m in server.messages if "error" in m]
    assert [e["code"] for e in errors] == [-32700, -32700]
    assert errors[0]["data"]["details"] == "nested too deeply"


def test_nan_infinity_and_huge_numbers_are_refused_never_echoed(
    fake_server: FakeServer, workspace: Path
) -> None:
    with raw_server(fake_server, workspace) as server:
        for request_id in (b"1e400", b"NaN", b"-Infinity"):
            server.send(b'{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{}}\n' % request_id)
        server.send(b'{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1e999}}\n')
        server.initialize()
        clean_exit(server)  # every stdout line was read as strict JSON (raw_client.strict_json)
    errors = [m for m in server.messages if "error" in m]
    assert [(m["id"], m["error"]["code"]) for m in errors] == [(None, -32700)] * 4


def test_ids_that_are_not_string_number_or_null_are_invalid_requests(
    fake_server: FakeServer, workspace: Path
) -> None:
    with raw_server(fake_server, workspace) as server:
        for request_id in ({"a": 1}, [1], True):
            server.request(request_id, "initialize", {"protocolVersion": 1})
        server.initialize()
        clean_exit(server)
    refused = [m for m in server.messages if "error" in m]
    assert [(m["id"], m["error"]["code"]) for m in refused] == [(None, -32600)] * 3


def test_bad_and_unknown_notifications_are_one_line_notices(fake_server: FakeServer, workspace: Path) -> None:
    with raw_server(fake_server, workspace) as server:
        server.initialize()
        for params in ({"sessionId": 5}, "x"):
            server.send({"jsonrpc": "2.0", "method": "session/cancel", "params": params})
        for method in ("document/didOpen", "initialize", "session/prompt"):
            server.send({"jsonrpc": "2.0", "method": method, "params": {}})
        server.initialize()
        clean_exit(server)
    assert [m.get("id") for m in server.messages] == ["init", "init"]  # notifications: never answered
    lines = server.stderr().splitlines()
    assert "  ValidationError: sessionId: Input should be a valid string" in lines
    assert len(lines) == 4, lines  # two records of two lines: no report of pydantic's, no "not found"


@contextlib.contextmanager
def permission_asked(fake_server: FakeServer, workspace: Path) -> Iterator[tuple[RawServer, dict[str, Any]]]:
    """A server whose prompt "p" (a turn writing out.txt) waits for an answer to its permission
    request: the server, and that request."""
    fake_server.push_tool_calls([("write_file", {"path": "out.txt", "content": "hello\n"})])
    fake_server.push_text("Done.")
    with raw_server(fake_server, workspace) as server:
        server.initialize()
        sid = server.new_session(workspace)
        server.prompt("p", sid, "write out.txt")
        yield server, server.server_request("session/request_permission")


def test_malformed_replies_to_a_permission_request_count_as_no(
    fake_server: FakeServer, workspace: Path
) -> None:
    with permission_asked(fake_server, workspace) as (server, asked):
        server.send({"jsonrpc": "2.0", "id": [asked["id"]], "result": {}})  # cannot be matched: dropped
        server.send({"jsonrpc": "2.0", "id": asked["id"], "error": "no"})  # not an error object
        assert server.reply("p")["result"]["stopReason"] == "end_turn"
        clean_exit(server)
    assert not (workspace / "out.txt").exists()
    assert "refused" in chat_bodies(fake_server)[1]["messages"][-1]["content"]
    assert "a reply from the client dropped: id is not a string, a number or null" in server.stderr()


def test_cancel_while_a_permission_request_waits_answers_cancelled_at_once(
    fake_server: FakeServer, workspace: Path
) -> None:
    with permission_asked(fake_server, workspace) as (server, asked):
        cancel = {"sessionId": asked["params"]["sessionId"]}
        server.send({"jsonrpc": "2.0", "method": "session/cancel", "params": cancel})
        assert server.reply("p")["result"] == {"stopReason": "cancelled"}  # the question is never answered
        clean_exit(server)
    assert not (workspace / "out.txt").exists()


def test_a_permission_reply_of_the_wrong_shape_is_one_line_on_stderr(
    fake_server: FakeServer, workspace: Path
) -> None:
    with permission_asked(fake_server, workspace) as (server, asked):
        server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"outcome": 5}})
        assert server.reply("p")["result"]["stopReason"] == "end_turn"
        clean_exit(server)
    assert not (workspace / "out.txt").exists()
    [line] = [line for line in server.stderr().splitlines() if "permission request failed" in line]
    assert line.endswith(
        "malformed reply (outcome: Input should be a valid dictionary or object to extract fields from)"
    )
    assert "pydantic" not in server.stderr()


def test_a_lone_surrogate_in_a_prompt_does_not_break_the_session(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_text("First.")
    fake_server.push_text("Second.")
    with raw_server(fake_server, workspace) as server:
        server.initialize()
        sid = server.new_session(workspace)
        server.send(
            b'{"jsonrpc":"2.0","id":"a","method":"session/prompt","params":{"sessionId":"%s",'
            b'"prompt":[{"type":"text","text":"broken \\ud800 text"}]}}\n' % sid.encode()
        )
        first = server.reply("a")
        server.prompt("b", sid, "and now?")
        second = server.reply("b")
        clean_exit(server)
    assert first.get("result") == {"stopReason": "end_turn"}, first
    assert second.get("result") == {"stopReason": "end_turn"}, second
    assert chat_bodies(fake_server)[0]["messages"][-1]["content"] == "broken \ufffd text"
    saved = json.loads((sessions_dir() / f"{sid}.json").read_text())
    assert [m["role"] for m in saved["messages"]] == ["system", "user", "assistant", "user", "assistant"]


@pytest.mark.parametrize(
    ("result", "told"),
    [
        ({"content": 5}, "malformed reply (content: Input should be a valid string)"),
        ({"content": "a\ud800b"}, "1\ta\ufffdb"),
    ],
)
def test_a_bad_fs_read_reply_is_a_one_line_tool_result(
    fake_server: FakeServer, workspace: Path, result: dict[str, Any], told: str
) -> None:
    fake_server.push_tool_calls([("read_file", {"path": "main.py"})])
    fake_server.push_text("Read.")
    with raw_server(fake_server, workspace) as server:
        server.initialize(fs=True)
        sid = server.new_session(workspace)
        server.prompt("p", sid, "read main.py")
        asked = server.server_request("fs/read_text_file")
        server.send({"jsonrpc": "2.0", "id": asked["id"], "result": result})
        assert server.reply("p").get("result") == {"stopReason": "end_turn"}
        clean_exit(server)
    tool_result = chat_bodies(fake_server)[1]["messages"][-1]["content"]
    assert told in tool_result
    assert "\n" not in tool_result.strip()
    assert "pydantic" not in tool_result


def test_a_cwd_name_too_long_for_the_file_system_is_invalid_params(
    fake_server: FakeServer, workspace: Path
) -> None:
    with raw_server(fake_server, workspace) as server:
        server.initialize()
        server.request("long", "session/new", {"cwd": "/" + "a" * 100_000, "mcpServers": []})
        error = server.reply("long")["error"]
        clean_exit(server)
    assert error["code"] == -32602
    assert "File name too long" in error["message"]
    assert len(error["message"]) < 300


def test_stdin_closed_mid_turn_answers_cancelled_and_saves(fake_server: FakeServer, workspace: Path) -> None:
    fake_server.push_text("slow " * 200, delay=0.02)
    with raw_server(fake_server, workspace) as server:
        server.initialize()
        sid = server.new_session(workspace)
        server.prompt("p", sid, "talk slowly")
        server.wait_for(lambda m: m.get("method") == "session/update" and "content" in m["params"]["update"])
        clean_exit(server)
        reply = server.reply("p")
    assert reply.get("result") == {"stopReason": "cancelled"}, reply
    saved = json.loads((sessions_dir() / f"{sid}.json").read_text())
    assert saved["messages"][1]["content"] == "talk slowly"


def test_the_server_ends_when_the_client_stops_hearing_it(fake_server: FakeServer, workspace: Path) -> None:
    with raw_server(fake_server, workspace) as server:
        server.initialize()
        assert server.process.stdout is not None
        server.process.stdout.close()  # stdin stays open: only the output is gone (SIGPIPE, EPIPE)
        server.request("lost", "initialize", {"protocolVersion": 1})
        assert server.process.wait(20) == 0, server.stderr()
        assert "Traceback" not in server.stderr()


def flood(server: RawServer, count: int) -> None:
    """`count` requests with one id, all read by the server, none of their replies read."""
    server.send(b'{"jsonrpc":"2.0","id":1,"method":"_nanohermes/none","params":{}}\n' * count)
    server.input_read()


def vm_peak_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    raise AssertionError("no VmHWM")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak memory from /proc")
def test_a_flood_of_requests_unread_replies_keeps_memory_bounded(
    fake_server: FakeServer, workspace: Path
) -> None:
    count = 150_000
    with raw_server(fake_server, workspace) as server:
        server.initialize()
        flood(server, count)
        peak = vm_peak_mb(server.process.pid)
        clean_exit(server)
    assert peak < 200
    assert sum(1 for m in server.messages if m.get("id") == 1) == count


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="reads a pipe's capacity (Linux)")
def test_stdin_closed_while_the_client_reads_no_replies_still_ends(
    fake_server: FakeServer, workspace: Path
) -> None:
    # the reading of requests waits while our replies are unread (see the flood above), but never
    # past the end of the client's input
    fake_server.push_text("word " * 100_000)
    with raw_server(fake_server, workspace) as server:
        server.initialize()
        sid = server.new_session(workspace)
        server.prompt("p", sid, "talk")
        assert server.process.stdout is not None
        capacity = fcntl.fcntl(server.process.stdout.fileno(), fcntl.F_GETPIPE_SZ)
        assert wait_for(lambda: unread(server.process.stdout) >= capacity // 2, 20)  # stdout fills up
        server.request("l1", "session/list", {})
        server.request("l2", "session/list", {})
        assert server.process.stdin is not None
        server.process.stdin.close()
        assert server.process.wait(60) == 0, server.stderr()
    assert (sessions_dir() / f"{sid}.json").exists()


def test_requests_reusing_an_id_are_all_answered_before_the_exit(
    fake_server: FakeServer, workspace: Path
) -> None:
    count = 5000
    with raw_server(fake_server, workspace) as server:
        server.initialize()
        flood(server, count)  # replies unread: they wait for the pipe
        server.end_input()  # the server must wait for every reply, not for the first with id 1
        clean_exit(server)
    assert sum(1 for m in server.messages if m.get("id") == 1) == count
