"""ToolRunner: offered tools, approvals, refusals, argument errors, caps, ordering, concurrency, cancel."""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path

import pytest
from tool_helpers import FakeApprover, args, auto_runner, call, results, run, started

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import Cancelled
from nanohermes.core.events import ToolFinished, ToolStarted
from nanohermes.core.protocols import ApprovalRequest, Decision
from nanohermes.tools import INTERRUPTED, CallContext, ToolRunner, cap_output, tool_from_function

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell")
READING = {"read_file", "list_files", "grep"}
MUTATING = {"write_file", "edit_file", "run_shell"}


def ask_runner(workspace: Path, approver: FakeApprover | None) -> ToolRunner:
    return ToolRunner(workspace, permission="ask", approver=approver, store=None)


def test_offered_tools_per_permission_mode(workspace: Path) -> None:
    runner = auto_runner(workspace)
    assert runner.names() == READING | MUTATING
    assert {s["function"]["name"] for s in runner.schemas()} == READING | MUTATING
    runner.set_permission("read-only")
    assert runner.names() == READING
    assert {s["function"]["name"] for s in runner.schemas()} == READING
    got = results(run(runner, [call("write_file", args(path="x", content="y"))]))
    assert got[0].content == "ERROR: write_file is not available in read-only mode"
    assert not (workspace / "x").exists()


def test_memory_tools_absent_without_a_store(workspace: Path) -> None:
    runner = ToolRunner(workspace, permission="read-only", approver=None, store=None)
    assert not any(name.startswith("memory_") for name in runner.names())
    got = results(run(runner, [call("memory_save", args(kind="fact", text="x"))]))
    assert got[0].content.startswith("ERROR: unknown tool 'memory_save'")


def test_bad_calls_become_error_results(workspace: Path) -> None:
    (workspace / "f.txt").write_text("hi\n")
    runner = auto_runner(workspace)
    calls = [
        call("read_file", '{"path": "f.txt"', "bad_json"),
        call("read_file", "[1, 2]", "not_object"),
        call("read_file", "{}", "missing"),
        call("read_file", args(path="f.txt", colour="red"), "unknown_arg"),
        call("read_file", args(path="f.txt", offset="two"), "bad_type"),
        call("fly_to_moon", "{}", "unknown_tool"),
        call("read_file", args(path="f.txt", offset="1"), "coerced"),
    ]
    events = run(runner, calls)
    got = results(events)
    assert [r.call_id for r in got] == [c.id for c in calls]
    assert got[0].content.startswith("ERROR: arguments for read_file are not valid JSON")
    assert got[1].content == "ERROR: arguments for read_file must be a JSON object, got list"
    assert got[2].content == "ERROR: read_file is missing required argument(s): path"
    assert got[3].content.startswith("ERROR: read_file got unknown argument(s) colour; allowed: path, offset")
    assert got[4].content.startswith("ERROR: read_file: argument offset must be an integer")
    assert got[5].content.startswith("ERROR: unknown tool 'fly_to_moon'; available: edit_file, grep")
    assert got[6].ok
    assert got[6].content == "     1\thi"
    assert [e.call.id for e in started(events)] == ["coerced"]
    assert all(not r.ok for r in got[:6])


def test_an_unknown_tool_name_of_any_length_is_not_echoed_whole(workspace: Path) -> None:
    runner = ToolRunner(workspace, permission="auto", approver=None, store=None)
    got = results(run(runner, [call("x" * 100_000, "{}", "long")]))
    assert got[0].content.startswith("ERROR: unknown tool 'xxx")
    assert len(got[0].content) < 1_000


def test_results_are_capped_keeping_head_and_tail(workspace: Path) -> None:
    def chatty() -> str:
        """Says a lot."""
        return "HEAD" + "m" * 5_000 + "TAIL"

    runner = auto_runner(workspace, tool_output_chars=500)
    runner.register(tool_from_function(chatty))
    content = results(run(runner, [call("chatty")]))[0].content
    assert len(content) <= 500
    assert content.startswith("HEADmmm")
    assert content.endswith("mmmTAIL")
    assert "\n[… 4558 characters omitted …]\n" in content
    assert cap_output("x" * 1000, 200).count("[… 850 characters omitted …]") == 1
    assert cap_output("short", 200) == "short"


@posix_only
def test_a_long_shell_result_keeps_its_own_note_of_what_was_cut(workspace: Path) -> None:
    """The shell report fits the cap, so the runner does not cut it again and hide the shell's note."""
    runner = auto_runner(workspace, tool_output_chars=2_000)
    command = f"{sys.executable} -c \"import sys; sys.stdout.write('x' * 1_000_000)\""
    content = results(run(runner, [call("run_shell", args(command=command))]))[0].content
    assert len(content) <= 2_000
    assert "characters omitted" not in content
    match = re.search(r"\[… (\d+) bytes omitted …\]", content)
    assert match is not None
    stdout = content.split("stdout:\n", 1)[1].split("\nstderr:", 1)[0]
    assert int(match.group(1)) + stdout.count("x") == 1_000_000


def test_error_results_are_capped_too(workspace: Path) -> None:
    def loud_crash() -> str:
        """Fails with a long message."""
        raise ValueError("why " * 1_000)

    runner = auto_runner(workspace, tool_output_chars=300)
    runner.register(tool_from_function(loud_crash))
    got = results(run(runner, [call("loud_crash")]))[0]
    assert not got.ok
    assert got.content.startswith("ERROR: loud_crash failed: ValueError: why why")
    assert len(got.content) <= 300
    assert "characters omitted" in got.content


def test_approval_yes_shows_the_diff_then_writes(workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\ntwo\n")
    approver = FakeApprover(Decision.YES)
    runner = ask_runner(workspace, approver)
    events = run(runner, [call("edit_file", args(path="a.txt", old="two", new="TWO"))])
    request = approver.requests[0]
    assert request.tool == "edit_file"
    assert request.title == "Edit a.txt"
    assert "-two\n+TWO" in request.detail
    assert "--- a/a.txt" in request.detail
    assert (workspace / "a.txt").read_text() == "one\nTWO\n"
    assert isinstance(events[0], ToolStarted)
    assert events[0].summary == "a.txt"
    finished = events[-1]
    assert isinstance(finished, ToolFinished)
    assert finished.summary == "ok · Edited a.txt: replaced 1 occurrence"


def test_approval_no_refuses_and_changes_nothing(workspace: Path) -> None:
    approver = FakeApprover(Decision.NO)
    runner = ask_runner(workspace, approver)
    events = run(
        runner,
        [
            call("write_file", args(path="new.txt", content="x\n")),
            call("run_shell", args(command="touch ran")),
        ],
    )
    got = results(events)
    assert [r.content for r in got] == [
        "refused: the user declined this write_file call. Do not retry it; ask the user how to proceed.",
        "refused: the user declined this run_shell call. Do not retry it; ask the user how to proceed.",
    ]
    assert started(events) == []
    assert not (workspace / "new.txt").exists()
    assert not (workspace / "ran").exists()
    assert [r.title for r in approver.requests] == [
        "Create new.txt",
        f"Run a shell command in {workspace.resolve()}",
    ]
    assert approver.requests[0].detail.startswith("--- /dev/null\n+++ b/new.txt")
    assert approver.requests[1].detail == "touch ran"
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert finished[0].summary.startswith("refused")


@posix_only
def test_approval_always_covers_the_kind_for_the_session(workspace: Path) -> None:
    approver = FakeApprover(Decision.ALWAYS, Decision.NO)
    runner = ask_runner(workspace, approver)
    run(runner, [call("write_file", args(path="a.txt", content="1\n"))])
    run(
        runner,
        [
            call("edit_file", args(path="a.txt", old="1", new="2")),
            call("write_file", args(path="b.txt", content="b"), "w2"),
        ],
    )
    assert len(approver.requests) == 1  # edits and writes are one kind, now always allowed
    got = results(run(runner, [call("run_shell", args(command="echo hi"))]))
    assert len(approver.requests) == 2
    assert got[0].content.startswith("refused")
    assert (workspace / "a.txt").read_text() == "2\n"
    assert (workspace / "b.txt").read_text() == "b"


def test_ask_without_approver_refuses_mutations_with_how_to_allow(workspace: Path) -> None:
    (workspace / "r.txt").write_text("readable\n")
    runner = ask_runner(workspace, None)
    got = results(
        run(
            runner,
            [call("write_file", args(path="w.txt", content="x")), call("read_file", args(path="r.txt"))],
        )
    )
    assert "re-run with --yes or --permission auto" in got[0].content.lower()
    assert got[0].content.startswith("ERROR: write_file was refused")
    assert got[1].ok
    assert "readable" in got[1].content
    assert not (workspace / "w.txt").exists()


def test_auto_mode_asks_nothing(workspace: Path) -> None:
    approver = FakeApprover(Decision.NO)
    runner = ToolRunner(workspace, permission="auto", approver=approver, store=None)
    got = results(run(runner, [call("write_file", args(path="w.txt", content="x"))]))
    assert got[0].ok
    assert approver.requests == []


def test_outside_path_may_be_granted_in_ask_mode_only(workspace: Path, outside: Path) -> None:
    secret = str(outside / "secret.txt")
    approver = FakeApprover(Decision.YES)
    got = results(run(ask_runner(workspace, approver), [call("read_file", args(path=secret))]))
    assert "TOP-SECRET" in got[0].content
    assert approver.requests[0].title.startswith("read_file wants a path outside the workspace")
    refuser = FakeApprover(Decision.NO)
    got = results(run(ask_runner(workspace, refuser), [call("read_file", args(path=secret))]))
    assert got[0].content.startswith("ERROR: path")
    assert "outside the workspace" in got[0].content
    never_asked = FakeApprover(Decision.YES)
    auto = ToolRunner(workspace, permission="auto", approver=never_asked, store=None)
    got = results(run(auto, [call("read_file", args(path=secret))]))
    assert "outside the workspace" in got[0].content
    assert never_asked.requests == []


def test_same_file_edits_run_in_call_order_and_previews_follow(workspace: Path) -> None:
    (workspace / "c.txt").write_text("a\n")
    approver = FakeApprover(Decision.YES)
    runner = ask_runner(workspace, approver)
    calls = [
        call("edit_file", args(path="c.txt", old="a", new="b"), "e1"),
        call("edit_file", args(path="c.txt", old="b", new="c"), "e2"),
        call("edit_file", args(path="./c.txt", old="c", new="d"), "e3"),
    ]
    got = results(run(runner, calls))
    assert [r.ok for r in got] == [True, True, True], [r.content for r in got]
    assert (workspace / "c.txt").read_text() == "d\n"
    assert ["-b\n+c" in r.detail for r in approver.requests] == [False, True, False]


def test_many_writes_to_one_file_keep_the_last(workspace: Path) -> None:
    runner = auto_runner(workspace)
    calls = [call("write_file", args(path="same.txt", content=f"v{i}\n"), f"w{i}") for i in range(12)]
    got = results(run(runner, calls))
    assert [r.call_id for r in got] == [c.id for c in calls]
    assert all(r.ok for r in got)
    assert (workspace / "same.txt").read_text() == "v11\n"


@posix_only
def test_calls_run_concurrently_and_results_keep_call_order(workspace: Path) -> None:
    """Each command waits for the other's marker: they can only both finish if they run at once."""
    runner = auto_runner(workspace)
    wait_for = (
        "i=0; while [ ! -f {other} ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; test -f {other}"
    )
    calls = [
        call("run_shell", args(command="touch A; " + wait_for.format(other="B") + "; echo first"), "s1"),
        call("run_shell", args(command="touch B; " + wait_for.format(other="A") + "; echo second"), "s2"),
        call("read_file", args(path="missing"), "r3"),
    ]
    events = run(runner, calls)
    got = results(events)
    assert [r.call_id for r in got] == ["s1", "s2", "r3"]
    assert got[0].content.startswith("exit code: 0")
    assert "first" in got[0].content
    assert got[1].content.startswith("exit code: 0")
    assert "second" in got[1].content
    assert [e.call.id for e in started(events)] == ["s1", "s2", "r3"]
    assert started(events)[0].summary.startswith("touch A; i=0;")


@posix_only
def test_cancellation_interrupts_unfinished_calls_and_kills_shells(workspace: Path) -> None:
    runner = auto_runner(workspace)
    (workspace / "f.txt").write_text("x\n")
    cancel = CancelToken()
    calls = [
        call("read_file", args(path="f.txt"), "done_first"),
        call("run_shell", args(command="sleep 1000 & echo $! > pid; sleep 1000"), "slow"),
        call("run_shell", args(command="sleep 1000"), "slow2"),
    ]
    threading.Timer(0.7, cancel.cancel).start()
    began = time.monotonic()
    events = run(runner, calls, cancel)
    elapsed = time.monotonic() - began
    got = results(events)
    assert [r.call_id for r in got] == ["done_first", "slow", "slow2"]
    assert got[0].ok
    assert got[0].content == "     1\tx"
    assert [r.content for r in got[1:]] == [INTERRUPTED, INTERRUPTED]
    assert elapsed < 0.7 + 2
    from test_tool_shell import wait_gone

    assert wait_gone(int((workspace / "pid").read_text()), 3)
    after = results(run(runner, [call("read_file", args(path="f.txt"), "late")], cancel))
    assert after[0].content == INTERRUPTED


def test_registered_tools_get_the_cancel_token_and_read_only_keeps_non_mutating_ones(workspace: Path) -> None:
    seen: list[CancelToken] = []

    def task(agent: str, ctx: CallContext) -> str:
        """Run a sub-agent.

        Args:
            agent: which one
        """
        seen.append(ctx.cancel)
        return f"ran {agent}"

    runner = ToolRunner(workspace, permission="read-only", approver=None, store=None)
    runner.register(tool_from_function(task))
    token = CancelToken()
    got = results(run(runner, [call("task", args(agent="explorer"))], token))
    assert got[0].content == "ran explorer"
    assert seen == [token]
    assert "task" in runner.names()


def test_a_crashing_tool_becomes_an_error_result(workspace: Path) -> None:
    def broken() -> str:
        """Always fails."""
        raise ValueError("boom")

    runner = auto_runner(workspace)
    runner.register(tool_from_function(broken))
    got = results(run(runner, [call("broken")]))
    assert got[0].content == "ERROR: broken failed: ValueError: boom"
    assert not got[0].ok


@posix_only
def test_every_approval_is_asked_before_anything_runs(workspace: Path) -> None:
    ran_before_second_answer: list[bool] = []

    def approver(request: ApprovalRequest) -> Decision:
        if request.tool == "write_file":
            ran_before_second_answer.append((workspace / "first").exists())
            return Decision.NO
        return Decision.YES

    runner = ToolRunner(workspace, permission="ask", approver=approver, store=None)
    calls = [
        call("run_shell", args(command="touch first"), "sh"),
        call("write_file", args(path="w", content="x"), "w"),
    ]
    events = run(runner, calls)
    assert ran_before_second_answer == [False]
    assert [e.call.id for e in started(events)] == ["sh"]
    assert (workspace / "first").exists()


def test_an_edit_that_cannot_apply_is_an_error_without_asking(workspace: Path) -> None:
    (workspace / "e.txt").write_text("alpha\n")
    approver = FakeApprover(Decision.YES)
    got = results(
        run(ask_runner(workspace, approver), [call("edit_file", args(path="e.txt", old="beta", new="x"))])
    )
    assert got[0].content.startswith("ERROR: old text not found in e.txt.")
    assert approver.requests == []


def test_approvals_from_parallel_batches_are_asked_one_at_a_time(workspace: Path) -> None:
    """Sub-agents of parallel `task` calls share one runner: the UI must never get two questions at once."""
    inside = 0
    most = 0
    lock = threading.Lock()

    def approver(request: ApprovalRequest) -> Decision:
        nonlocal inside, most
        with lock:
            inside += 1
            most = max(most, inside)
        time.sleep(0.05)
        with lock:
            inside -= 1
        return Decision.YES

    runner = ToolRunner(workspace, permission="ask", approver=approver, store=None)
    batches = [[call("write_file", args(path=f"f{i}.txt", content=str(i)))] for i in range(4)]
    threads = [threading.Thread(target=run, args=(runner, batch)) for batch in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert most == 1
    assert sorted(p.name for p in workspace.iterdir()) == ["f0.txt", "f1.txt", "f2.txt", "f3.txt"]


def test_ctrl_c_at_an_approval_interrupts_that_call_and_asks_no_more(workspace: Path) -> None:
    """The approver raises `Cancelled` (Ctrl-C at the question) before the cancel token is set: the
    asked call and every later call of the batch get the interrupted result, and none is asked."""
    asked: list[str] = []

    def approver(request: ApprovalRequest) -> Decision:
        asked.append(request.call.id if request.call else "")
        raise Cancelled()

    runner = ToolRunner(workspace, permission="ask", approver=approver, store=None)
    calls = [call("write_file", args(path=f"{n}.txt", content="x"), n) for n in ("a", "b", "c")]
    got = results(run(runner, calls))
    assert asked == ["a"]
    assert [(r.call_id, r.content, r.ok) for r in got] == [(n, INTERRUPTED, False) for n in "abc"]
    assert not any(workspace.iterdir())
