"""What a session costs as it grows: saving a turn, listing, and resuming in `-p`.

    .venv/bin/python bench/session_bench.py [--runs N]

Figures (medians over N runs, every baseline measured in this same run so the machine's load cancels):
- save of a 13 MB session (live context at the compaction threshold, the rest archived): one turn's
  save (render on the turn's thread + write and fsync), against `json.dumps` of the live messages
  (goal: ≤ 10 ms, or ≤ 2× that dumps), and against the version 1 format (indented, archive inside);
  the same with one compaction's worth of messages archived in the turn; and a 13 MB session whose
  whole context is live (compaction threshold raised), against `json.dumps` of it.
- `/sessions` over two big files: header reads against full loads.
- `nanohermes -p hi` resuming a 68 MB session against a fresh session, both against the fake endpoint
  of tests/fake_server.py on loopback (goal: ≤ 1.3×).
Prints figures and ratios; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fake_server import FakeServer  # noqa: E402

from nanohermes.core.fileio import atomic_write  # noqa: E402
from nanohermes.core.types import Message  # noqa: E402
from nanohermes.sessions.store import SessionData, SessionFile, describe_session  # noqa: E402

MB = 1024 * 1024
LIVE_CHARS = 100_000  # under the default compact_threshold_chars (120,000): no compaction on resume
GOAL_SAVE_MS = 10.0
GOAL_SAVE_RATIO = 2.0
GOAL_RESUME_RATIO = 1.3


def exchange(n: int) -> list[Message]:
    """One realistic tool round: a question, a call, a file's content, an answer."""
    body = "".join(f"    line {i} of module {n}: value = compute({i}, 'é')\n" for i in range(90))
    call = {
        "id": f"call_{n}",
        "type": "function",
        "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/m{n}.py"})},
    }
    return [
        {"role": "user", "content": f"What does module {n} do? Look at src/m{n}.py."},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{n}", "content": body},
        {"role": "assistant", "content": f"Module {n} computes values line by line. " * 8},
    ]


def messages_of(size: int) -> list[Message]:
    found: list[Message] = []
    total, n = 0, 0
    while total < size:
        batch = exchange(n)
        found += batch
        total += len(json.dumps(batch, ensure_ascii=False))
        n += 1
    return found


def session_of(total: int, live: int) -> SessionData:
    history = messages_of(total)
    cut = len(history)
    chars = 0
    while cut > 0 and chars < live:
        cut -= 1
        chars += len(json.dumps(history[cut], ensure_ascii=False))
    while cut < len(history) and history[cut]["role"] != "user":
        cut += 1
    system: Message = {"role": "system", "content": "You are nanohermes. " * 200}
    live = [system, *history[cut:]]
    return SessionData(model="bench", workspace="/w", messages=live, archive=history[:cut])


def median_ms(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def bench_save(directory: Path, runs: int) -> None:
    data = session_of(13 * MB, LIVE_CHARS)
    session = SessionFile(directory / "s13.json")
    session.save(data)  # the archive goes to the sidecar once
    size = session.path.stat().st_size + session.archive_path.stat().st_size
    live = data.messages

    def turn() -> None:
        live.extend([{"role": "user", "content": "next?"}, {"role": "assistant", "content": "ok"}])
        session.write(SessionFile.render(data))

    dumps = median_ms(lambda: json.dumps(live, ensure_ascii=False), runs)
    save = median_ms(turn, runs)
    render = median_ms(lambda: SessionFile.render(data), runs)
    print(f"13 MB session ({size / MB:.1f} MB on disk, {len(json.dumps(live)) // 1024} KB live)")
    print(f"  json.dumps(live messages)            {dumps:8.2f} ms")
    print(f"  render on the turn's thread          {render:8.2f} ms  = {render / dumps:.2f}× dumps")
    verdict = "met" if save <= GOAL_SAVE_MS or save <= GOAL_SAVE_RATIO * dumps else "NOT met"
    print(
        f"  save of one turn (render+write+fsync){save:8.2f} ms  = {save / dumps:.2f}× dumps "
        f"(goal ≤ {GOAL_SAVE_MS:g} ms or ≤ {GOAL_SAVE_RATIO:g}×: {verdict})"
    )
    text = session.path.read_bytes()
    bare = median_ms(lambda: _write_fsync(directory / "bare", text), runs)
    print(f"  bare write+fsync of the same bytes   {bare:8.2f} ms  (this disk's floor; the save's write is")
    print(f"  {'':37}{'':8}     in the writer thread, so the turn waits only for the render)")
    old = SessionData(**{**vars(data), "archive": SessionFile(session.path).load_archive()})
    old_path = directory / "v1.json"

    def old_save() -> None:
        text = json.dumps({"version": 1, "messages": old.messages, "archive": old.archive}, indent=1)
        atomic_write(old_path, text.encode())

    old_ms = median_ms(old_save, max(3, runs // 3))
    print(f"  version 1 save (indented, archive)   {old_ms:8.2f} ms  = {old_ms / save:.1f}× the new save")
    chunk = messages_of(100_000)

    def compacting_turn() -> None:
        data.archive.extend(chunk)
        session.write(SessionFile.render(data))

    compacting = median_ms(compacting_turn, runs)
    print(f"  save of a turn archiving 100 KB      {compacting:8.2f} ms")
    whole = session_of(13 * MB, 13 * MB)
    whole_session = SessionFile(directory / "live13.json")
    whole_dumps = median_ms(lambda: json.dumps(whole.messages, ensure_ascii=False), max(3, runs // 3))
    whole_save = median_ms(lambda: whole_session.save(whole), max(3, runs // 3))
    print(
        f"13 MB all live: json.dumps {whole_dumps:.1f} ms, save {whole_save:.1f} ms "
        f"= {whole_save / whole_dumps:.2f}× dumps"
    )
    listing = median_ms(lambda: [describe_session(p) for p in (session.path, whole_session.path)], runs)
    loading = median_ms(lambda: [SessionFile(p).load() for p in (session.path, whole_session.path)], 3)
    print(f"/sessions over both: header reads {listing:.2f} ms, full loads {loading:.1f} ms")


def _write_fsync(path: Path, data: bytes) -> None:
    with path.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def nanohermes() -> list[str]:
    script = Path(sys.executable).with_name("nanohermes")
    return [str(script)] if script.exists() else [sys.executable, "-m", "nanohermes"]


def bench_resume(directory: Path, runs: int) -> None:
    home = directory / "home"
    sessions = home / ".nanohermes" / "sessions"
    data = session_of(68 * MB, LIVE_CHARS)
    SessionFile(sessions / "big.json").save(data)
    size = (sessions / "big.json").stat().st_size + (sessions / "big.archive.jsonl").stat().st_size
    server = FakeServer(default_text="hi there")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NANOHERMES_", "OPENAI_"))}
    env.update(HOME=str(home), NANOHERMES_API_KEY="bench-key", LANG="C.UTF-8")
    base = [*nanohermes(), "--base-url", server.url, "--model", "bench", "--no-memory"]

    def run(*extra: str) -> None:
        subprocess.run([*base, *extra, "-p", "hi"], env=env, cwd=directory, check=True, capture_output=True)

    try:
        run()  # warm the file cache and bytecode
        fresh = median_ms(run, runs)
        resumed = median_ms(lambda: run("--session", "big"), runs)
    finally:
        server.close()
    verdict = "met" if resumed <= GOAL_RESUME_RATIO * fresh else "NOT met"
    print(f"-p hi, fresh session                   {fresh:8.1f} ms")
    label = f"-p hi, resuming a {size / MB:.0f} MB session"
    goal = f"(goal ≤ {GOAL_RESUME_RATIO:g}×: {verdict})"
    print(f"{label:<39}{resumed:8.1f} ms  = {resumed / fresh:.2f}× fresh {goal}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nh-session-bench-") as tmp:
        bench_save(Path(tmp), args.runs)
        bench_resume(Path(tmp), max(3, args.runs // 3))


if __name__ == "__main__":
    main()
