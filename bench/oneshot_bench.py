"""What `nanohermes -p` costs next to the least a program can do for the same answer.

    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python bench/oneshot_bench.py [--runs N]

Figures (medians over N runs, all measured in this same run so the machine's load cancels out):
- `python -c pass`                the interpreter's floor
- a bare script                  imports httpx and pydantic-settings, builds one BaseSettings from
                                   the environment, makes one streamed chat-completions request and
                                   prints the answer (issue 33's baseline)
- the same script, lean            httpx imported without its command-line client (click, rich and
                                   pygments load with httpx whenever click is installed — the MCP SDK
                                   brings it — and nanohermes skips them: nanohermes/app/wiring.py)
- `nanohermes -p hi`              the same request through nanohermes (fresh session, memory on)
Both talk to the fake endpoint of tests/fake_server.py on loopback. Goal: `-p` ≤ 1.3 × the bare
script. Run it with bytecode caches allowed (`env -u PYTHONDONTWRITEBYTECODE`), as users run it.
Prints figures and ratios; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fake_server import FakeServer  # noqa: E402

GOAL_RATIO = 1.3
BARE = """
import json, sys
import httpx
from pydantic_settings import BaseSettings, SettingsConfigDict

class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="NANOHERMES_")
    api_key: str = ""
    model: str = "bench"

settings = Settings()
url = sys.argv[1]
body = {"model": settings.model, "messages": [{"role": "user", "content": "hi"}], "stream": True}
parts = []
with httpx.Client() as client:
    headers = {"authorization": f"Bearer {settings.api_key}"}
    with client.stream("POST", url + "/chat/completions", json=body, headers=headers) as response:
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                for choice in json.loads(line[6:]).get("choices") or []:
                    parts.append((choice.get("delta") or {}).get("content") or "")
print("".join(parts))
"""


LEAN_BARE = (
    "import sys, types\n"
    "sys.modules['httpx._main'] = types.ModuleType('httpx._main')\n"
    "import httpx\n"
    "del sys.modules['httpx._main']\n" + BARE
)


def timed_ms(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, capture_output=True)
    return (time.perf_counter() - start) * 1000


def interleaved_medians(commands: list[list[str]], env: dict[str, str], cwd: Path, runs: int) -> list[float]:
    """Median time of each command, run in turns (a, b, c, a, b, c, …) so that a change in the
    machine's load while the bench runs weighs on all of them alike."""
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for index, argv in enumerate(commands):
            times[index].append(timed_ms(argv, env, cwd))
    return [statistics.median(each) for each in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print(
            "note: PYTHONDONTWRITEBYTECODE is set; run with `env -u PYTHONDONTWRITEBYTECODE` for real figures"
        )
    script = Path(sys.executable).with_name("nanohermes")
    server = FakeServer(default_text="Hello! How can I help?")
    with tempfile.TemporaryDirectory(prefix="nh-oneshot-bench-") as tmp:
        home = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NANOHERMES_", "OPENAI_"))}
        env.update(HOME=str(home), NANOHERMES_API_KEY="bench-key", LANG="C.UTF-8")
        nh = [str(script), "--base-url", server.url, "--model", "bench", "-p", "hi"]
        bare = [sys.executable, "-c", BARE, server.url]
        lean = [sys.executable, "-c", LEAN_BARE, server.url]
        try:
            for argv in (nh, bare, lean):  # warm the file cache and bytecode
                subprocess.run(argv, env=env, cwd=home, check=True, capture_output=True)
            floor, bare_ms, lean_ms, nh_ms = interleaved_medians(
                [[sys.executable, "-c", "pass"], bare, lean, nh], env, home, args.runs
            )
        finally:
            server.close()
    ratio = nh_ms / bare_ms
    print(f"python -c pass                {floor:7.1f} ms")
    print(f"bare httpx + settings script  {bare_ms:7.1f} ms")
    print(f"… without httpx's CLI         {lean_ms:7.1f} ms")
    verdict = "met" if ratio <= GOAL_RATIO else "NOT met"
    goal = f"(goal ≤ {GOAL_RATIO:g}×: {verdict})"
    print(f"nanohermes -p hi              {nh_ms:7.1f} ms  = {ratio:.2f}× the bare script {goal}")
    print(f"{'':30}{'':10}  = {nh_ms / lean_ms:.2f}× the bare script without httpx's CLI")


if __name__ == "__main__":
    main()
