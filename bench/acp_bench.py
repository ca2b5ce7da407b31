"""What the ACP server adds: per prompt over the in-process loop, and memory per idle session.

    .venv/bin/python bench/acp_bench.py [--prompts 100] [--sessions 50]

Both sides talk to the same fake OpenAI-compatible endpoint (tests/fake_server.py: real loopback
HTTP, a streamed ~40-token answer), so the model's own time cancels out:
- baseline: the same agent (built by the composition root, memory on) run in this process;
- ACP: the real `nanohermes acp` subprocess driven by the SDK's client side, one session; each
  prompt's round trip includes its streamed `session/update`s (text is sent at most once per
  8 ms frame, so a burst costs a few messages).
After each prompt both sides clear the conversation (the ACP side with an untimed `/reset`), so
every prompt carries the same short history.
The two alternate prompt by prompt, so both see the same load on a shared machine.
Added cost per prompt = ACP median − baseline median (wall clock: on a busy machine every hop
between processes and threads waits for a core, so the CPU each side spends per prompt is printed
too). Then idle memory: the server's RSS (VmRSS)
after one warm session and after `--sessions` more, divided per session.
Goals: ≤ 5 ms per prompt, ≤ 1 MB per idle session. Figures only, no assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from acp import schema, spawn_agent_process, text_block  # noqa: E402
from fake_server import FakeServer  # noqa: E402

from nanohermes.app.agent_wiring import AgentParts, build_agent, open_locked  # noqa: E402
from nanohermes.config.settings import load_settings  # noqa: E402
from nanohermes.core.cancel import CancelToken  # noqa: E402
from nanohermes.core.events import TurnFinished  # noqa: E402

ANSWER = "Sure. " + "This answer streams in small pieces like a real model would. " * 4
PROMPT = "hi"  # short: no distillation, so only the turn itself is timed


class _Quiet:
    def on_connect(self, conn: Any) -> None:
        return None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None


class Baseline:
    """The same agent, built by the composition root, run in this process."""

    def __init__(self, server: FakeServer, workspace: Path) -> None:
        from nanohermes.llm import ChatClient
        from nanohermes.memory import MemoryStore

        settings = load_settings({"base_url": server.url, "model": "fake-model", "permission": "auto"})
        self.client = ChatClient.from_settings(settings)
        opened = open_locked(settings.sessions_dir / "bench-baseline.json")
        parts = AgentParts(self.client, MemoryStore(settings.memory_dir), None)
        self.agent = build_agent(settings, parts, opened, workspace=workspace).agent
        self.cpu: list[float] = []
        """CPU seconds of each turn on its thread (the loop, the HTTP client, the SSE parser)."""

    def turn(self) -> float:
        started, cpu = time.perf_counter(), time.thread_time()
        events = list(self.agent.run(PROMPT, CancelToken()))
        elapsed = time.perf_counter() - started
        self.cpu.append(time.thread_time() - cpu)
        assert isinstance(events[-1], TurnFinished)
        assert events[-1].completed
        self.agent.flush()
        del self.agent.messages[1:]
        return elapsed


async def measure(
    server: FakeServer, workspace: Path, prompts: int, sessions: int
) -> tuple[list[float], list[float], int, int, tuple[float, float, float]]:
    """Baseline turns and ACP prompts alternate, so both see the same machine load."""
    script = Path(sys.executable).with_name("nanohermes")
    env = {k: v for k, v in os.environ.items() if k.startswith(("NANOHERMES_", "HOME"))}
    args = ["acp", "--base-url", server.url, "--model", "fake-model", "--permission", "auto"]
    baseline = Baseline(server, workspace)
    with tempfile.TemporaryFile() as stderr:
        async with spawn_agent_process(
            _Quiet(), str(script), *args, env=env, transport_kwargs={"stderr": stderr.fileno()}
        ) as (conn, process):
            await conn.initialize(protocol_version=1, client_capabilities=schema.ClientCapabilities())
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            base, over = [], []
            cpu = [0.0, 0.0]
            for _ in range(prompts):
                base.append(baseline.turn())
                before_cpu = server_cpu(process.pid)
                started = time.perf_counter()
                reply = await conn.prompt(session_id=new.session_id, prompt=[text_block(PROMPT)])
                over.append(time.perf_counter() - started)
                after_cpu = server_cpu(process.pid)
                cpu = [cpu[i] + after_cpu[i] - before_cpu[i] for i in range(2)]
                assert reply.stop_reason == "end_turn"
                await conn.prompt(session_id=new.session_id, prompt=[text_block("/reset")])  # as baseline
            before = rss_kib(process.pid)
            for _ in range(sessions):
                await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await asyncio.sleep(0.5)
            after = rss_kib(process.pid)
    baseline.client.close()
    return base, over, before, after, (sum(baseline.cpu) / prompts, cpu[0] / prompts, cpu[1] / prompts)


def cpu_seconds(pid: int, thread: int | None = None) -> float:
    """User + system CPU so far of process `pid` (all its threads), or of one of its threads."""
    stat = Path(f"/proc/{pid}/task/{thread}/stat" if thread else f"/proc/{pid}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu(pid: int) -> tuple[float, float]:
    """(whole process, its main thread: the event loop that speaks the protocol)."""
    return cpu_seconds(pid), cpu_seconds(pid, pid)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=100)
    parser.add_argument("--sessions", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ.update(
            HOME=home,
            NANOHERMES_MEMORY_DIR=f"{home}/.nanohermes",
            NANOHERMES_SESSIONS_DIR=f"{home}/.nanohermes/sessions",
            NANOHERMES_API_KEY="sk-bench",
        )
        workspace = Path(home) / "ws"
        workspace.mkdir()
        server = FakeServer(default_text=ANSWER)
        try:
            base, acp_times, before, after, (base_cpu, acp_cpu, loop_cpu) = asyncio.run(
                measure(server, workspace, args.prompts, args.sessions)
            )
        finally:
            server.close()
    base_ms, acp_ms = statistics.median(base) * 1000, statistics.median(acp_times) * 1000
    print(f"prompts: {args.prompts} ('{PROMPT}', streamed answer of {len(ANSWER)} chars in 8-char pieces)")
    print(f"in-process loop   median {base_ms:7.2f} ms   p90 {_p90(base) * 1000:7.2f} ms")
    print(f"over ACP (stdio)  median {acp_ms:7.2f} ms   p90 {_p90(acp_times) * 1000:7.2f} ms")
    print(f"added per prompt  {acp_ms - base_ms:7.2f} ms   (goal ≤ 5 ms; ratio {acp_ms / base_ms:.2f}×)")
    print(
        f"CPU per prompt: in-process turn {base_cpu * 1000:.2f} ms on its thread; ACP server "
        f"{acp_cpu * 1000:.2f} ms in all threads (turn, HTTP sender, session save), "
        f"{loop_cpu * 1000:.2f} ms of it on the event loop (the protocol)"
    )
    per_session = (after - before) / max(1, args.sessions)
    print(
        f"idle RSS: {before / 1024:.1f} MiB with 1 session, {after / 1024:.1f} MiB with {args.sessions + 1}: "
        f"{per_session:.0f} KiB per idle session (goal ≤ 1024 KiB)"
    )


def _p90(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.9) - 1]


if __name__ == "__main__":
    main()
