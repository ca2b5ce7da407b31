"""The shadow git repository (SPEC §11): the workspace as its work tree, its own GIT_DIR and index.

The user's own `.git` is never read or written: hooks point at /dev/null, no user or system config is
read, other `GIT_*` variables are dropped, and `info/attributes` turns off line-ending conversion and
filters so the bytes stored are the bytes on disk. A turn's two snapshots become commits under
`refs/nanohermes/…`, kept while the session's journal lists them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from nanohermes.checkpoints.journal import CheckpointError, FileChange, FileState

GIT_TIMEOUT = 120.0
COUNT_TIMEOUT = 15.0
"""Listing the workspace (to choose git or copies) normally takes well under a second."""
INDEX_NAME = "nanohermes-index"
GITLINK = 0o160000
ATTRIBUTES = "* -text -eol -ident -filter -working-tree-encoding -diff\n"
CONFIG = (
    "user.name=nanohermes",
    "user.email=checkpoints@nanohermes.invalid",
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.autocrlf=false",
    "core.symlinks=true",
    "core.quotePath=false",
    "advice.addEmbeddedRepo=false",
    "gc.auto=0",
    "maintenance.auto=false",
)


class GitTimeout(CheckpointError):
    """git did not finish within GIT_TIMEOUT seconds (a workspace holding huge files)."""


class ShadowRepo:
    def __init__(self, git: str, git_dir: Path, workspace: Path) -> None:
        self.git = git
        self.git_dir = git_dir
        self.workspace = workspace
        self.index = git_dir / INDEX_NAME
        self.env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
        self.env.update(
            GIT_DIR=str(git_dir),
            GIT_WORK_TREE=str(workspace),
            GIT_INDEX_FILE=str(self.index),
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_CONFIG_NOSYSTEM="1",
            GIT_LITERAL_PATHSPECS="1",
            GIT_TERMINAL_PROMPT="0",
            LC_ALL="C",
        )

    def run(
        self, *args: str, stdin: bytes | None = None, ok_codes: tuple[int, ...] = (0,), timeout: float = 0
    ) -> bytes:
        command = [self.git, *(part for item in CONFIG for part in ("-c", item)), *args]
        try:
            done = subprocess.run(
                command,
                cwd=self.workspace,
                env=self.env,
                input=stdin,
                stdin=None if stdin is not None else subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout or GIT_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise GitTimeout(f"git {args[0]} took over {timeout or GIT_TIMEOUT:g} s") from None
        except OSError as err:
            raise CheckpointError(f"cannot run git: {err.strerror or err}") from None
        if done.returncode not in ok_codes:
            lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
            why = lines[-1] if lines else f"exit code {done.returncode}"
            raise CheckpointError(f"git {args[0]} failed: {why}")
        return done.stdout

    def ensure(self, excluded: list[str]) -> None:
        """Create the shadow repository on first use; `excluded`: workspace folders never snapshotted."""
        try:
            # `objects/` is made last: a `git init` cut short (a full disk) leaves HEAD without it, and
            # such a repository fails every later command until `git init` runs again and completes it
            if not (self.git_dir / "HEAD").exists() or not (self.git_dir / "objects").is_dir():
                self.git_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
                self.run("init", "--quiet")
            info = self.git_dir / "info"
            info.mkdir(exist_ok=True)
            (info / "attributes").write_text(ATTRIBUTES, encoding="utf-8")
            patterns = "".join(f"/{_literal(path)}/\n" for path in excluded)
            (info / "exclude").write_text(patterns, encoding="utf-8")
        except OSError as err:
            raise CheckpointError(f"cannot set up {self.git_dir}: {err.strerror}") from None

    def count_files(self) -> int:
        """Files a snapshot would hold. Raises CheckpointError when git has not listed them within
        COUNT_TIMEOUT seconds (it waits for ever on a .gitignore that is a FIFO)."""
        args = ("ls-files", "-z", "--cached", "--others", "--exclude-standard")
        try:
            # a broken index fails it (128) having listed nothing: the snapshot rebuilds the index
            return self.run(*args, ok_codes=(0, 128), timeout=COUNT_TIMEOUT).count(b"\0")
        except GitTimeout:
            raise CheckpointError(f"git took over {COUNT_TIMEOUT:g} s to list the workspace") from None

    def ignores(self, relative: str) -> bool:
        """Whether a snapshot leaves out `relative` (.gitignore, info/exclude; never a file it tracks)."""
        try:
            return bool(self.run("check-ignore", "--", relative, ok_codes=(0, 1)).strip())
        except CheckpointError:
            return True  # unsure: the caller keeps a copy, which restores it either way

    def snapshot(self) -> str:
        """Record the workspace as it is now; returns the tree id. The caller holds the checkpoints'
        file lock, so an index lock left by a killed git is stale and removed."""
        self.index.with_name(self.index.name + ".lock").unlink(missing_ok=True)
        add_all = ("add", "--all", "--ignore-errors", "--", ".")
        try:
            self.run(*add_all, ok_codes=(0, 1))
        except GitTimeout:
            raise  # rebuilding the index would only take longer
        except CheckpointError:
            if not self.index.exists():
                raise
            # The index only caches what earlier snapshots read; one left broken (a full disk, a
            # truncated copy) would fail every later snapshot of every session here: rebuild it.
            self.index.unlink()
            self.run(*add_all, ok_codes=(0, 1))
        tree = self.run("write-tree").decode().strip()
        self._forget_nested_repositories()
        return tree

    def _forget_nested_repositories(self) -> None:
        """Drop nested repositories (gitlinks) from the index: for one in the index, `git add` runs
        `git status` inside it, obeying its own config (a filter or fsmonitor command there would run)."""
        listed = self.run("ls-files", "--stage", "-z").split(b"\0")
        gitlinks = [entry.split(b"\t", 1)[1] for entry in listed if entry.startswith(b"160000 ")]
        if gitlinks:
            self.run(
                "update-index", "-z", "--force-remove", "--stdin", stdin=b"".join(g + b"\0" for g in gitlinks)
            )

    def commit(self, tree: str, message: str, parent: str = "") -> str:
        parents = ("-p", parent) if parent else ()
        return self.run("commit-tree", tree, "-m", message, *parents).decode().strip()

    def drop_refs(self, prefix: str) -> bool:
        listed = self.run("for-each-ref", "--format=%(refname)", prefix).decode().split()
        if listed:
            self.run("update-ref", "--stdin", stdin="".join(f"delete {ref}\n" for ref in listed).encode())
        return bool(listed)

    def changes(self, before: str, after: str) -> list[FileChange]:
        """Files that differ between two trees (a rename: a deletion and an addition), none in a folder that
        is, was or became a nested repository (undo must neither remove its files nor overwrite them)."""
        raw = self.run("diff-tree", "-r", "-z", "--no-renames", "--raw", before, after)
        fields = raw.split(b"\0")
        changes: list[FileChange] = []
        nested: list[str] = []
        for meta, raw_path in zip(fields[0::2], fields[1::2], strict=False):
            old_mode, new_mode, old_id, new_id, _status = meta[1:].decode().split(" ")
            path = raw_path.decode("utf-8", "surrogateescape")
            old, new = FileState(int(old_mode, 8), old_id), FileState(int(new_mode, 8), new_id)
            if GITLINK in (old.mode, new.mode):
                nested.append(path + "/")
            else:  # mode 0: absent
                changes.append(FileChange(path, old if old.mode else None, new if new.mode else None))
        return [change for change in changes if not change.path.startswith(tuple(nested))]

    def read_blobs(self, ids: list[str]) -> dict[str, bytes]:
        """The contents of blobs by id, in one `git cat-file --batch` run."""
        unique = list(dict.fromkeys(ids))
        out = self.run("cat-file", "--batch", stdin="".join(f"{i}\n" for i in unique).encode())
        blobs: dict[str, bytes] = {}
        position = 0
        for blob_id in unique:
            end = out.index(b"\n", position)
            header = out[position:end].decode().split(" ")
            if len(header) < 3:
                raise CheckpointError(f"git lost object {blob_id} of a checkpoint")
            size = int(header[2])
            blobs[blob_id] = out[end + 1 : end + 1 + size]
            position = end + 1 + size + 1
        return blobs


def _literal(path: str) -> str:
    """`path` as a gitignore pattern matching only itself."""
    return "".join("\\" + char if char in "*?[]\\!# " else char for char in path)
