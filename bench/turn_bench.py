"""Per-turn overhead of the agent loop: everything except the model's own time.

    .venv/bin/python bench/turn_bench.py [--turns 200] [--memories 500] [--messages 100]

Setup: a memory.json with 500 realistic entries, a resumed session of 100 messages (~60,000
characters, tool calls included), the real ToolRunner and MemoryStore, and a model that answers
instantly, so what is timed is retrieval + injection, the loop, the compaction check and the session
snapshot (rendered on the turn's thread; the atomic write with fsync runs in the agent's writer
thread, off the turn's path, and is flushed untimed between turns, as while the user reads). Each
turn's two new messages are removed again so the session stays at 100 messages. Prints the median
and p90 per turn, the same with memory off (baseline, same run) and the parts timed on their own.
Goal: median ≤ 5 ms. Figures only, no assertions.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from nanohermes.agent.compaction import total_chars
from nanohermes.agent.loop import Agent
from nanohermes.agent.prompts import base_system_prompt
from nanohermes.config.settings import Settings
from nanohermes.core.events import StreamItem
from nanohermes.core.types import ChatResult, Message, Usage
from nanohermes.memory import MemoryStore, recall_for_turn
from nanohermes.sessions.store import SessionData, SessionFile
from nanohermes.tools.runner import ToolRunner

SUBJECTS = [
    "the deploy script",
    "pytest",
    "the Docker image",
    "the API server",
    "ruff",
    "mypy",
    "the release job",
    "uv",
    "nginx",
]
VERBS = [
    "must run",
    "should skip",
    "always uses",
    "never touches",
    "needs",
    "prefers",
    "depends on",
    "fails on",
]
OBJECTS = [
    "a dry-run first",
    "Python 3.11",
    "port 8080",
    "short answers",
    "type hints",
    "UTC timestamps",
    "pinned versions",
]
ZH = [
    "部署脚本",
    "前端构建",
    "数据库迁移",
    "单元测试",
    "日志系统",
    "缓存层",
    "配置文件",
    "发布流程",
    "代码评审",
    "依赖升级",
]
KINDS = ("preference", "correction", "lesson", "fact")
QUERIES = [
    "run the tests for the API server please",
    "why does the deploy script fail on port 8080?",
    "帮我看看数据库迁移为什么失败",
    "continue",
    "add type hints to the release job module and check with mypy",
]


class InstantModel:
    """A ChatModel that answers at once (no network): the turn's time is all overhead."""

    def stream(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None, **_: Any
    ) -> Iterator[StreamItem | ChatResult]:
        yield ChatResult(content="Done.", finish_reason="stop", usage=Usage(1000, 10, 1010))

    def complete(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None, **_: Any
    ) -> ChatResult:
        return ChatResult(content="[]", finish_reason="stop")


def write_memories(directory: Path, count: int, rng: random.Random) -> None:
    entries = []
    for n in range(count):
        if n % 3 == 0:
            text = f"{rng.choice(ZH)}需要先{rng.choice(ZH)}，确认无误后再执行（{n}）"
        else:
            text = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} (case {n})"
        entries.append(
            {"id": f"m{n:04d}", "kind": KINDS[n % 4], "text": text, "source": "auto", "ts": 1_700_000_000 + n}
        )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "memory.json").write_text(json.dumps({"version": 1, "entries": entries}), encoding="utf-8")


def session_messages(count: int, rng: random.Random) -> list[Message]:
    messages: list[Message] = [{"role": "system", "content": "old"}]
    n = 0
    while len(messages) < count:
        messages.append(
            {"role": "user", "content": f"please look at module {n} " + "x" * rng.randint(50, 300)}
        )
        call = {
            "id": f"c{n}",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "a"}'},
        }
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append(
            {"role": "tool", "tool_call_id": f"c{n}", "content": "line\n" * rng.randint(100, 400)}
        )
        messages.append({"role": "assistant", "content": "It does this. " * rng.randint(5, 40)})
        n += 1
    return messages[:count]


def build_agent(root: Path, memory: bool, messages: int, rng: random.Random) -> Agent:
    workspace = root / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    store = MemoryStore(root / "mem") if memory else None
    session = SessionFile(root / "sessions" / f"bench-{memory}.json")
    data = SessionData(messages=session_messages(messages, rng))
    runner = ToolRunner(workspace, permission="auto", approver=None, store=store)
    config = Settings(model="instant")
    prompt = base_system_prompt(workspace, memory=memory)
    return Agent(InstantModel(), runner, config, prompt, session=session, store=store, resumed=data)


def time_turns(agent: Agent, turns: int) -> list[float]:
    """Time whole turns; between turns (untimed, like a user reading) the session write is flushed."""
    size = len(agent.messages)
    samples = []
    for n in range(turns):
        query = f"{QUERIES[n % len(QUERIES)]} {n}"  # a fresh query each turn (no memoised terms)
        start = time.perf_counter()
        for _ in agent.run(query):
            pass
        samples.append((time.perf_counter() - start) * 1000)
        agent.flush()
        del agent.messages[size:]
    return samples


def time_part(func: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def line(label: str, samples: list[float], baseline: float | None = None) -> str:
    median = statistics.median(samples)
    p90 = statistics.quantiles(samples, n=10)[-1] if len(samples) >= 10 else max(samples)
    ratio = f"   {median / baseline:5.2f}× baseline" if baseline else ""
    return f"  {label:<44} median {median:7.3f} ms   p90 {p90:7.3f} ms{ratio}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--messages", type=int, default=100)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_memories(root / "mem", args.memories, rng)
        with_memory = build_agent(root, True, args.messages, rng)
        without = build_agent(root, False, args.messages, rng)
        time_turns(with_memory, 5)  # warm-up: first parse of memory.json, imports
        time_turns(without, 5)
        base = time_turns(without, args.turns)
        full = time_turns(with_memory, args.turns)
        store = MemoryStore(root / "mem")
        store.search("warm up")
        fresh = itertools.count()
        chars = total_chars(with_memory.messages)
        print(f"turn overhead: {args.memories} memories, {args.messages}-message session ({chars:,} chars)")
        baseline = statistics.median(base)
        print(line("whole turn, memory off (baseline)", base))
        print(line("whole turn, memory on", full, baseline))
        print("parts, memory on:")
        print(
            line(
                "retrieval + block (recall_for_turn)",
                time_part(lambda: recall_for_turn(store, f"{QUERIES[0]} {next(fresh)}", "").block, 200),
            )
        )
        print(
            line("compaction check (total_chars)", time_part(lambda: total_chars(with_memory.messages), 200))
        )
        session = SessionFile(root / "sessions" / "parts.json")
        data = SessionData(messages=list(with_memory.messages))
        print(line("session render (on the turn's thread)", time_part(lambda: session.render(data), 100)))
        print(line("session write + fsync (writer thread)", time_part(lambda: session.save(data), 50)))
        verdict = "meets" if statistics.median(full) <= 5.0 else "misses"
        print(f"goal ≤ 5 ms median per turn: {verdict} ({statistics.median(full):.3f} ms)")


if __name__ == "__main__":
    main()
