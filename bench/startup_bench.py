"""Start-up time of nanohermes, measured the way a user feels it.

    .venv/bin/python bench/startup_bench.py [--runs N]

Figures (medians over N runs, all measured in this same run so the machine's load cancels out):
- `python -c pass`                    the interpreter's own floor
- `nanohermes --version`              the command line's fixed cost (goal: ≤ 2.5 × the floor)
- launch → REPL prompt, in a pty      `nanohermes` started in a pseudo-terminal until the prompt is
                                      drawn (goal: ≤ 400 ms), then Ctrl-D
- the same resuming a 68 MB session   `nanohermes --session big`: the summary and the prompt come
                                      before the runtime is built (ratio against a new session)
The REPL is pointed at an unreachable loopback endpoint (port 9) with a throwaway HOME: start-up must
make no network call, so it reaches the prompt all the same. Needs `pexpect` (test extra). Prints
figures and ratios; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROMPT = "❯"
GOAL_PROMPT_MS = 400.0
GOAL_VERSION_RATIO = 2.5


def nanohermes_command() -> list[str]:
    script = Path(sys.executable).with_name("nanohermes")
    if script.exists():
        return [str(script)]
    found = shutil.which("nanohermes")
    return [found] if found else [sys.executable, "-m", "nanohermes"]


def bench_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NANOHERMES_", "OPENAI_"))}
    env.update(
        HOME=str(home),
        NANOHERMES_MODEL="bench-model",
        NANOHERMES_BASE_URL="http://127.0.0.1:9/v1",
        NANOHERMES_API_KEY="bench-key",
        TERM="xterm-256color",
        LANG="C.UTF-8",
    )
    return env


def time_command(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000


def time_to_prompt(argv: list[str], env: dict[str, str], home: Path) -> float:
    import pexpect

    start = time.perf_counter()
    child = pexpect.spawn(argv[0], argv[1:], env=env, cwd=str(home), encoding="utf-8", timeout=20)
    child.expect(PROMPT)
    elapsed = (time.perf_counter() - start) * 1000
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    return elapsed


def big_session(home: Path) -> None:
    """A 68 MB session (100 KB live, the rest archived) under `home`, as bench/session_bench.py makes it."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from session_bench import LIVE_CHARS, MB, session_of

    from nanohermes.sessions.store import SessionFile

    SessionFile(home / ".nanohermes" / "sessions" / "big.json").save(session_of(68 * MB, LIVE_CHARS))


def line(label: str, times: list[float], floor: float | None = None) -> str:
    median = statistics.median(times)
    ratio = f"   {median / floor:4.2f} × python -c pass" if floor else ""
    return f"{label:<34} median {median:7.1f} ms   min {min(times):7.1f} ms{ratio}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="runs per measurement (default 9)")
    args = parser.parse_args()
    command = nanohermes_command()
    with tempfile.TemporaryDirectory(prefix="nh-bench-") as tmp:
        home = Path(tmp)
        env = bench_env(home)
        big_session(home)
        resume = [*command, "--session", "big"]
        time_to_prompt(command, env, home)  # warm the file cache and .pyc files
        time_to_prompt(resume, env, home)
        floor_times: list[float] = []
        version_times: list[float] = []
        prompt_times: list[float] = []
        resume_times: list[float] = []
        for _ in range(args.runs):  # interleaved, so a burst of load hits all four alike
            floor_times.append(time_command([sys.executable, "-c", "pass"], env))
            version_times.append(time_command([*command, "--version"], env))
            prompt_times.append(time_to_prompt(command, env, home))
            resume_times.append(time_to_prompt(resume, env, home))
    floor = statistics.median(floor_times)
    print(f"nanohermes start-up ({args.runs} runs each, {os.cpu_count()} CPUs, command: {' '.join(command)})")
    print(line("python -c pass", floor_times))
    print(line("nanohermes --version", version_times, floor))
    print(line("launch → REPL prompt (pty)", prompt_times, floor))
    resume_ratio = statistics.median(resume_times) / statistics.median(prompt_times)
    print(line("… resuming a 68 MB session", resume_times, floor) + f"   {resume_ratio:4.2f} × a new session")
    prompt_median = statistics.median(prompt_times)
    version_ratio = statistics.median(version_times) / floor
    print(
        f"goals: prompt ≤ {GOAL_PROMPT_MS:.0f} ms → {prompt_median:.0f} ms; "
        f"--version ≤ {GOAL_VERSION_RATIO} × python -c pass → {version_ratio:.2f} ×"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
