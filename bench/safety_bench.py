"""Cost of the safety net: checkpoints on a 5,000-file workspace, and the shell sandbox per command.

    .venv/bin/python bench/safety_bench.py [--files 5000] [--turns 10] [--commands 30]

Checkpoints (SPEC §11; goal: < 300 ms for the first change of a turn, 0 for a turn without changes):
  - cold:   the first change ever in this workspace (shadow repository created, every file hashed)
  - start:  the first change of a new nanohermes process (repository exists: file count + snapshot)
  - turn:   the first change of each later turn (one file edited between turns: a snapshot)
  - end:    recording a turn that changed one file (second snapshot, commits, journal)
  - none:   a turn that changed nothing (begin_turn + end_turn, nothing snapshotted)
  baseline: one write_file tool call without checkpoints, same run.
Sandbox (SPEC §12; goal: < 20 ms per command): `run_shell("true")` under bubblewrap vs plainly, same
run. Prints medians and p90s; figures only, no assertions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from nanohermes.checkpoints import Checkpoints
from nanohermes.core.cancel import CancelToken
from nanohermes.core.types import ToolCall
from nanohermes.tools.base import CallContext
from nanohermes.tools.runner import ToolRunner
from nanohermes.tools.sandbox import Sandbox
from nanohermes.tools.shell import ShellTool


def make_workspace(root: Path, files: int) -> None:
    for n in range(files):
        folder = root / f"pkg{n // 100:03d}"
        folder.mkdir(exist_ok=True)
        body = "".join(f"def function_{n}_{i}(x):\n    return x * {i}\n\n" for i in range(30))
        (folder / f"module_{n:05d}.py").write_text(body)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


def summary(label: str, samples: list[float]) -> float:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    median = statistics.median(ordered)
    print(f"  {label:<44} median {ms(median)}   p90 {ms(p90)}   (n={len(samples)})")
    return median


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def write_call(runner: ToolRunner, path: str, text: str) -> None:
    call = ToolCall("c1", "write_file", json.dumps({"path": path, "content": text}))
    list(runner.run_calls([call], CancelToken()))


def bench_checkpoints(root: Path, state: Path, turns: int) -> None:
    session = state / "bench-session.json"
    baseline_runner = ToolRunner(root, permission="auto", approver=None, store=None)
    baseline = [timed(lambda n=n: write_call(baseline_runner, "scratch.txt", f"v{n}")) for n in range(turns)]

    cold_cp = Checkpoints(root, state, session)
    cold_cp.begin_turn("cold")
    cold = timed(lambda: cold_cp.before_change(None))
    cold_cp.end_turn()
    print(f"  {'cold: first change ever in this workspace':<44} {ms(cold)}   (store: {cold_cp.store})")
    print("  (at start-up the warm-up thread pays this before the first turn, in the background)")

    starts, warmups, warmed, firsts, ends, nones = [], [], [], [], [], []
    for _ in range(turns):
        cp = Checkpoints(root, state, session)  # a new process: the shadow repository exists
        cp.begin_turn("start")
        starts.append(timed(lambda cp=cp: cp.before_change(None)))
        cp.end_turn()
        cp = Checkpoints(root, state, session)
        warmups.append(timed(cp.warm_up))
        cp.begin_turn("start")
        warmed.append(timed(lambda cp=cp: cp.before_change(None)))
        cp.end_turn()
    cp = Checkpoints(root, state, session)
    runner = ToolRunner(root, permission="auto", approver=None, store=None, checkpoints=cp)
    cp.begin_turn("warm")
    cp.before_change(None)
    cp.end_turn()
    for n in range(turns):
        (root / "pkg000" / "module_00000.py").write_text(f"# edited by the user {n}\n")
        cp.begin_turn(f"turn {n}")
        firsts.append(timed(lambda cp=cp: cp.before_change(None)))
        write_call(runner, f"pkg001/module_{100 + n:05d}.py", f"# agent {n}\n")
        ends.append(timed(cp.end_turn))
        cp.begin_turn("nothing")
        nones.append(timed(cp.end_turn))
    base = summary("baseline: one write_file, no checkpoints", baseline)
    summary("start: first change in a new process", starts)
    summary("warm-up at start-up (background thread)", warmups)
    summary("start: first change after the warm-up", warmed)
    first = summary("turn: first change of a turn (goal < 300 ms)", firsts)
    summary("end: recording a turn that changed 1 file", ends)
    none = summary("none: a turn without changes (goal 0)", nones)
    print(f"  first change of a turn = {first / base:.1f}× one plain write_file; no-change turn {ms(none)}")


def bench_sandbox(root: Path, state: Path, commands: int) -> None:
    sandbox = Sandbox.detect("auto", network=False, workspace=root, hidden=[state])
    plain = ShellTool(root)
    confined = ShellTool(root, sandbox=sandbox)
    ctx = CallContext(CancelToken())
    if not sandbox.active:
        print(f"  sandbox not measured: {sandbox.problem}")
        return
    plain_times = [timed(lambda: plain.run_shell("true", ctx=ctx)) for _ in range(commands)]
    boxed_times = [timed(lambda: confined.run_shell("true", ctx=ctx)) for _ in range(commands)]
    base = summary("baseline: run_shell('true') plainly", plain_times)
    boxed = summary("run_shell('true') under bubblewrap", boxed_times)
    overhead = ms(boxed - base).strip()
    print(f"  sandbox overhead per command: {overhead} (goal < 20 ms), {boxed / base:.2f}× plain")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--commands", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root, state = Path(tmp) / "ws", Path(tmp) / "state"
        root.mkdir()
        make_workspace(root, args.files)
        print(f"checkpoints, workspace of {args.files:,} files:")
        bench_checkpoints(root, state, args.turns)
        print("shell sandbox:")
        bench_sandbox(root, state, args.commands)


if __name__ == "__main__":
    main()
