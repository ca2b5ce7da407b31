"""What MCP servers cost nanohermes, measured against baselines taken in the same run.

    .venv/bin/python bench/mcp_bench.py [--runs N] [--calls N]

1. Start-up: launch → REPL prompt in a pty (as bench/startup_bench.py) with no MCP server configured
   and with three (the test suite's demo server, tests/mcp/demo_server.py, over stdio), interleaved.
   Goal: the same within noise (servers start in the background, after the prompt is drawn). Also
   prints Ctrl-D → exit with three servers (they are closed and their process groups killed).
2. Per call: the same `echo` tool called (a) straight through the SDK's `Client` on an asyncio loop
   (the transport and the server's own time: the baseline), (b) through `McpManager.submit` from
   another thread, (c) as the model's tool call through `ToolRunner.run_calls` (argument checks,
   dispatch, result capping), in rounds that alternate (a) with (b)+(c) so that all see the same
   load. Goal: (c) − (a) ≤ 2 ms. Prints medians; asserts nothing about time. `--calls-only`: skip 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from startup_bench import bench_env, nanohermes_command, time_to_prompt

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "tests" / "mcp" / "demo_server.py"
GOAL_CALL_MS = 2.0


def write_config(home: Path, servers: int) -> None:
    config = home / ".nanohermes" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    tables = [
        f"[mcp_servers.demo{n}]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(DEMO))}]\n"
        for n in range(servers)
    ]
    config.write_text("\n".join(tables), encoding="utf-8")


def time_to_prompt_and_exit(argv: list[str], env: dict[str, str], home: Path) -> tuple[float, float]:
    import pexpect

    start = time.perf_counter()
    child = pexpect.spawn(argv[0], argv[1:], env=env, cwd=str(home), encoding="utf-8", timeout=60)
    child.expect("❯")
    prompt = (time.perf_counter() - start) * 1000
    time.sleep(1.5)  # let the servers come up, so exit has three to close
    stop = time.perf_counter()
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    return prompt, (time.perf_counter() - stop) * 1000


def bench_startup(runs: int) -> None:
    command = nanohermes_command()
    with (
        tempfile.TemporaryDirectory(prefix="nh-mcp-none-") as none_dir,
        tempfile.TemporaryDirectory(prefix="nh-mcp-three-") as three_dir,
    ):
        none_home, three_home = Path(none_dir), Path(three_dir)
        write_config(three_home, 3)
        none_env, three_env = bench_env(none_home), bench_env(three_home)
        time_to_prompt(command, none_env, none_home)  # warm the file cache and .pyc files
        time_to_prompt_and_exit(command, three_env, three_home)
        none_times, three_times, exits = [], [], []
        for _ in range(runs):
            none_times.append(time_to_prompt(command, none_env, none_home))
            prompt, exit_ms = time_to_prompt_and_exit(command, three_env, three_home)
            three_times.append(prompt)
            exits.append(exit_ms)
    none_median, three_median = statistics.median(none_times), statistics.median(three_times)
    spread = statistics.pstdev(none_times)
    print(f"start-up ({runs} runs each, interleaved, {os.cpu_count()} CPUs)")
    for label, times in (("no MCP server", none_times), ("3 MCP servers", three_times)):
        median = statistics.median(times)
        print(f"  launch → prompt, {label:<18} median {median:7.1f} ms   min {min(times):7.1f} ms")
    print(f"  Ctrl-D → exit, 3 MCP servers       median {statistics.median(exits):7.1f} ms")
    print(
        f"  goal: the same within noise → difference {three_median - none_median:+.1f} ms "
        f"(run-to-run spread without servers: ±{spread:.1f} ms)"
    )


ROUNDS = 10


async def interleaved(calls: int, managed_block: Callable[[int], None]) -> list[float]:
    """The baseline, in rounds alternating with `managed_block` (run in a thread meanwhile, while this
    loop waits idle): every case sees the same machine load. Returns the baseline's times."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=[str(DEMO)])
    times: list[float] = []
    block = max(1, calls // ROUNDS)
    with open(os.devnull, "w") as devnull:
        async with Client(stdio_client(params, errlog=devnull)) as client:
            for _ in range(20):
                await client.call_tool("echo", {"text": "warm"})
            for _ in range(ROUNDS):
                for _ in range(block):
                    start = time.perf_counter()
                    await client.call_tool("echo", {"text": "hello"})
                    times.append((time.perf_counter() - start) * 1000)
                await asyncio.to_thread(managed_block, block)
    return times


def bench_calls(calls: int) -> None:
    from nanohermes.config.mcp_config import McpServerConfig
    from nanohermes.core.cancel import CancelToken, result_of
    from nanohermes.core.types import ToolCall
    from nanohermes.mcp.manager import McpManager
    from nanohermes.tools.runner import ToolRunner

    managed: list[float] = []
    through_runner: list[float] = []
    with tempfile.TemporaryDirectory(prefix="nh-mcp-calls-") as tmp:
        server = McpServerConfig(command=sys.executable, args=(str(DEMO),))
        manager = McpManager({"demo": server}, cwd=Path(tmp))
        manager.start()
        try:
            runner = ToolRunner(Path(tmp), permission="auto", approver=None, store=None)
            runner.add_source(manager.tools)
            runner.names()  # waits for the server
            token = CancelToken()

            def call_echo(text: str) -> None:
                result_of(manager.submit("demo", "echo", {"text": text}), token)

            for _ in range(20):
                call_echo("warm")

            def managed_block(count: int) -> None:
                for n in range(count):
                    start = time.perf_counter()
                    call_echo("hello")
                    managed.append((time.perf_counter() - start) * 1000)
                    call = ToolCall(id=f"call_{n}", name="mcp__demo__echo", arguments='{"text": "hello"}')
                    start = time.perf_counter()
                    list(runner.run_calls([call], token))
                    through_runner.append((time.perf_counter() - start) * 1000)

            sdk = asyncio.run(interleaved(calls, managed_block))
        finally:
            manager.close()
    base = statistics.median(sdk)
    print(f"\nper call ({len(sdk)} calls each, {ROUNDS} interleaved rounds, the demo server's `echo`, stdio)")
    print(f"  (a) SDK Client.call_tool on its own loop    median {base:6.2f} ms   (the baseline)")
    cases = (("(b) McpManager.submit from a thread", managed), ("(c) ToolRunner.run_calls", through_runner))
    for label, times in cases:
        median = statistics.median(times)
        print(f"  {label:<42} median {median:6.2f} ms   added {median - base:+6.2f} ms")
    added = statistics.median(through_runner) - base
    print(f"  goal: added cost of a model's MCP call ≤ {GOAL_CALL_MS:.0f} ms → {added:.2f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="start-up runs per case (default 7)")
    parser.add_argument("--calls", type=int, default=300, help="calls per case (default 300)")
    parser.add_argument("--calls-only", action="store_true", help="only the per-call figures")
    args = parser.parse_args()
    if not args.calls_only:
        bench_startup(args.runs)
    bench_calls(args.calls)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
