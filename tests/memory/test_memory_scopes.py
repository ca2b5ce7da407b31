"""Scopes (SPEC §3.9) through the public API: project keys, what each project sees, promotion."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from memory_helpers import raw_entry, write_raw

from nanohermes.core.errors import MemoryRejected
from nanohermes.memory import Kind, MemoryStore, project_key
from nanohermes.memory.project import normalise_remote

A, B = "github.com/me/alpha", "github.com/me/beta"


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Me/Tool.git",
        "https://github.com/me/tool",
        "https://user:s3cret@GitHub.com/me/tool.git/",
        "ssh://git@github.com:22/me/tool.git",
    ],
)
def test_remote_urls_of_one_repository_give_one_key(url: str, tmp_path: Path) -> None:
    assert normalise_remote(url, tmp_path) == "github.com/me/tool"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_project_key_from_origin_top_level_or_workspace(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert project_key(plain) == str(plain)
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    _git(repo, "init", "-q")
    assert project_key(repo / "src" / "deep") == str(repo)  # no remote: the top level
    _git(repo, "remote", "add", "origin", "https://token@example.org/Team/Repo.git")
    assert project_key(repo / "src") == "example.org/team/repo"
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
    tree = tmp_path / "linked"
    _git(repo, "worktree", "add", "-q", str(tree))
    assert project_key(tree) == "example.org/team/repo"  # a worktree reads the common config


def test_each_project_sees_global_and_its_own(tmp_path: Path) -> None:
    alpha = MemoryStore(tmp_path, project=A)
    beta = MemoryStore(tmp_path, project=B)
    assert alpha.remember(Kind.FACT, "the deploy script is scripts/ship.sh", source="auto")
    assert alpha.remember(Kind.PREFERENCE, "always deploy with a dry run first", source="auto")
    assert [e.project for e in alpha.load()] == [A, None]  # facts: the project; preferences: global
    assert [e.text for _, e in beta.search("deploy script")] == ["always deploy with a dry run first"]
    assert len(alpha.search("deploy script")) == 2
    assert "ship.sh" not in beta.retrieve_block("how do we deploy the script")
    assert [e.text for e in beta.visible()] == ["always deploy with a dry run first"]
    assert len(MemoryStore(tmp_path).search("deploy script")) == 2  # no project: every entry
    assert beta.matching_ids(alpha.load()[0].id) == []
    assert beta.matching_ids(alpha.load()[0].id, everywhere=True) == [alpha.load()[0].id]
    stored = json.loads((tmp_path / "memory.json").read_text(encoding="utf-8"))["entries"]
    assert stored[0]["project"] == A
    assert "project" not in stored[1]


def test_explicit_scopes_and_bad_scope(tmp_path: Path) -> None:
    alpha = MemoryStore(tmp_path, project=A)
    assert alpha.remember(Kind.PREFERENCE, "use tabs in the alpha Makefile", scope="project")
    assert alpha.remember(Kind.FACT, "python 3.12 is installed everywhere", scope="global")
    assert [e.project for e in alpha.load()] == [A, None]
    with pytest.raises(MemoryRejected, match="scope"):
        alpha.remember(Kind.FACT, "something else entirely", scope="team")


def test_project_memory_relearnt_in_another_project_becomes_global(tmp_path: Path) -> None:
    alpha = MemoryStore(tmp_path, project=A)
    beta = MemoryStore(tmp_path, project=B)
    assert alpha.remember(Kind.LESSON, "run pytest with -x to stop at the first failure")
    assert not beta.remember(Kind.LESSON, "run pytest with -x to stop at the first failure")
    (entry,) = alpha.load()
    assert entry.project is None
    assert beta.search("pytest failure")
    # re-learnt in the same project: it stays the project's
    assert alpha.remember(Kind.FACT, "the alpha api listens on port 8443")
    assert not alpha.remember(Kind.FACT, "the alpha api listens on port 8443.")
    assert alpha.load()[-1].project == A


def test_legacy_file_is_all_global(tmp_path: Path) -> None:
    write_raw(tmp_path, [raw_entry("fact", "the deploy script is scripts/ship.sh", 5)], version=None)
    for project in (A, B):
        store = MemoryStore(tmp_path, project=project)
        assert [e.text for _, e in store.search("deploy script")] == ["the deploy script is scripts/ship.sh"]


def test_index_follows_writes_in_each_scope(tmp_path: Path) -> None:
    alpha = MemoryStore(tmp_path, project=A)
    beta = MemoryStore(tmp_path, project=B)
    assert beta.search("kubernetes") == []
    for i in range(5):
        assert alpha.remember(Kind.FACT, f"kubernetes cluster number {i} runs in zone {i}")
    assert beta.search("kubernetes") == []
    assert len(alpha.search("kubernetes cluster", top_k=10)) == 5
    assert alpha.forget(alpha.load()[0].id)
    assert len(alpha.search("kubernetes cluster", top_k=10)) == 4
    assert not beta.remember(Kind.FACT, "kubernetes cluster number 3 runs in zone 3")
    assert [e.text for _, e in beta.search("kubernetes")] == ["kubernetes cluster number 3 runs in zone 3"]
    assert len(alpha.search("kubernetes cluster", top_k=10)) == 4


def test_distillation_asks_for_a_scope_and_defaults_by_kind(tmp_path: Path) -> None:
    from nanohermes.memory import DISTILL_SYSTEM_PROMPT, parse_distill, save_distilled

    assert '"scope": "global|project"' in DISTILL_SYSTEM_PROMPT
    items = parse_distill(
        json.dumps(
            [
                {"kind": "fact", "text": "ripgrep is installed on every machine", "scope": "GLOBAL"},
                {"kind": "preference", "text": "use tabs in this repository's Makefile", "scope": "project"},
                {"kind": "lesson", "text": "the alpha tests need docker running", "scope": "team"},
                {"kind": "correction", "text": "never push to main directly"},
            ]
        )
    )
    assert [item.scope for item in items] == ["global", "project", None, None]
    alpha = MemoryStore(tmp_path, project=A)
    assert save_distilled(alpha, items) == 4
    assert [e.project for e in alpha.load()] == [None, A, A, None]
