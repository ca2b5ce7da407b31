"""Scopes and visible memory end to end (issue #18): the real console script, two git repositories
with different remotes sharing one memory directory, a scripted loopback endpoint."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_process import DISTILL, run_nanohermes
from fake_server import FakeServer
from fake_server import fake_server as fake_server

ALPHA, BETA = "github.com/me/alpha", "github.com/me/beta"
FACT, PREF = "The deploy script is scripts/ship.sh.", "Always indent shell scripts with tabs."

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _repo(root: Path, name: str, remote: str) -> Path:
    path = root / name
    (path / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True, timeout=30)
    subprocess.run(["git", "remote", "add", "origin", remote], cwd=path, check=True, timeout=30)
    return path


@pytest.fixture
def repos(tmp_path: Path) -> tuple[Path, Path]:
    return (
        _repo(tmp_path, "alpha", "git@github.com:me/alpha.git"),
        _repo(tmp_path, "beta-clone", "https://token@github.com/Me/Beta"),
    )


def nh(server: FakeServer | None, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250"}
    return run_nanohermes(server, cwd, *args, key="sk-e2e-0123456789abcdef", env=env)


def memory_entries() -> list[dict[str, Any]]:
    path = Path(os.environ["NANOHERMES_MEMORY_DIR"]) / "memory.json"
    entries = json.loads(path.read_text(encoding="utf-8"))["entries"]
    assert isinstance(entries, list)
    return entries


def last_system(server: FakeServer) -> str:
    chats = [b for b in server.bodies if DISTILL not in json.dumps(b)]
    content = chats[-1]["messages"][0]["content"]
    assert isinstance(content, str)
    return content


def ask(server: FakeServer, cwd: Path, prompt: str) -> dict[str, Any]:
    server.push_text("ok")
    done = nh(server, cwd, "-p", prompt, "--json")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert isinstance(payload, dict)
    return payload


def test_project_fact_stays_in_its_repository_global_preference_everywhere(
    fake_server: FakeServer, repos: tuple[Path, Path]
) -> None:
    alpha, beta = repos
    fake_server.push_text("Noted.")
    distilled = [{"kind": "fact", "text": FACT}, {"kind": "preference", "text": PREF}]
    fake_server.push_text(json.dumps(distilled), match=DISTILL)
    learnt = nh(fake_server, alpha / "src", "-p", "Remember how we deploy here and that I like tabs")
    assert learnt.returncode == 0, learnt.stderr
    assert {e["text"]: e.get("project") for e in memory_entries()} == {FACT: ALPHA, PREF: None}

    in_beta = ask(fake_server, beta, "how do I deploy the shell scripts with tabs")
    assert PREF in last_system(fake_server)
    assert "ship.sh" not in last_system(fake_server)
    assert [(m["kind"], m["text"]) for m in in_beta["memories"]] == [("preference", PREF)]
    assert isinstance(in_beta["memories"][0]["id"], str)
    assert in_beta["memories"][0]["score"] > 0

    in_alpha = ask(fake_server, alpha, "how do I deploy the shell scripts with tabs")
    assert PREF in last_system(fake_server)
    assert FACT in last_system(fake_server)
    assert sorted(m["text"] for m in in_alpha["memories"]) == sorted([FACT, PREF])

    unrelated = ask(fake_server, beta, "what is the capital of France, in one word")
    assert unrelated["memories"] == []

    listed_beta = nh(None, beta, "memory", "list")
    assert PREF in listed_beta.stdout
    assert "ship.sh" not in listed_beta.stdout
    assert "1 more in other projects" in listed_beta.stdout
    listed_alpha = nh(None, alpha, "memory", "list")
    assert FACT in listed_alpha.stdout
    assert PREF in listed_alpha.stdout
    every = nh(None, beta, "memory", "list", "--all")
    assert FACT in every.stdout
    assert ALPHA in every.stdout
    assert PREF in every.stdout
    assert "ship.sh" not in nh(None, beta, "memory", "search", "deploy", "script").stdout
    assert "ship.sh" in nh(None, beta, "memory", "search", "deploy", "script", "--all").stdout


def test_add_export_import_round_trip_and_twice_adds_nothing(
    repos: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alpha, beta = repos
    redis = nh(None, alpha, "memory", "add", "fact", "alpha talks to redis on port 6380", "--project")
    assert redis.returncode == 0, redis.stderr
    added = nh(None, beta, "memory", "add", "preference", "answer in short sentences")
    assert added.returncode == 0, added.stderr
    assert "global" in added.stdout
    again = nh(None, beta, "memory", "add", "preference", "answer in short sentences")
    assert "Duplicate" in again.stdout
    assert nh(None, beta, "memory", "add", "lesson", "run pytest -x first", "--project").returncode == 0
    before = memory_entries()
    exported = nh(None, beta, "memory", "export")
    assert exported.returncode == 0, exported.stderr
    assert "## Global" in exported.stdout
    assert f"## Project {ALPHA}" in exported.stdout
    assert f"## Project {BETA}" in exported.stdout
    assert "### Preference" in exported.stdout
    export_file = tmp_path / "memories.md"
    export_file.write_text(exported.stdout, encoding="utf-8")

    monkeypatch.setenv("NANOHERMES_MEMORY_DIR", str(tmp_path / "fresh"))  # an empty memory dir
    first = nh(None, beta, "memory", "import", str(export_file))
    assert first.returncode == 0, first.stderr
    assert "Imported 3 new" in first.stdout
    after = memory_entries()

    def shape(entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return sorted((e["id"], e["kind"], e["text"], e.get("project")) for e in entries)

    assert shape(after) == shape(before)
    second = nh(None, alpha, "memory", "import", str(export_file))
    assert "Imported 0 new" in second.stdout
    assert shape(memory_entries()) == shape(before)
    as_json = tmp_path / "more.json"
    as_json.write_text(json.dumps([{"kind": "fact", "text": "CI runs on GitHub Actions"}]), encoding="utf-8")
    assert "Imported 1 new" in nh(None, alpha, "memory", "import", str(as_json)).stdout
    bad = tmp_path / "bad.md"
    bad.write_text("## Global\n### Habits\n- stretch\n", encoding="utf-8")
    refused = nh(None, alpha, "memory", "import", str(bad))
    assert refused.returncode == 2
    assert "line 2" in refused.stderr
    assert len(memory_entries()) == 4


def test_legacy_file_keeps_working_in_every_repository(
    fake_server: FakeServer, repos: tuple[Path, Path]
) -> None:
    alpha, beta = repos
    memory_dir = Path(os.environ["NANOHERMES_MEMORY_DIR"])
    memory_dir.mkdir(parents=True, exist_ok=True)
    seed = {"entries": [{"kind": "fact", "text": "The deploy script is scripts/ship.sh", "ts": 5}]}
    (memory_dir / "memory.json").write_text(json.dumps(seed), encoding="utf-8")
    for repo in (alpha, beta):
        payload = ask(fake_server, repo, "how do I deploy")
        assert "ship.sh" in last_system(fake_server)
        assert [m["text"] for m in payload["memories"]] == ["The deploy script is scripts/ship.sh"]
        assert "ship.sh" in nh(None, repo, "memory", "list").stdout
