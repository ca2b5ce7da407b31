"""How `run_shell` commands are confined (SPEC §12): under bubblewrap (the filesystem read-only but the
workspace, not its `.git`, and a private `/tmp`; nanohermes' own directories covered, the network cut
unless `sandbox_network`, no capabilities even for root, its own PID namespace), or plainly."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from nanohermes.core.errors import ToolError

PROBE_TIMEOUT = 5.0
SECRET_VARIABLES = ("NANOHERMES_API_KEY", "OPENAI_API_KEY")  # never visible to a sandboxed command
RUNTIME_DIR = Path("/run")
"""Daemons' sockets (session bus, ssh agent, docker): a socket on a read-only mount still takes
connections, and through the bus or docker anything could be done outside: so commands get an empty one."""
NETWORK_RUNTIME = ("/run/systemd/resolve",)  # kept with the network: /etc/resolv.conf may point there
PROGRAM_RUNTIME = ("/run/current-system", "/run/wrappers")  # kept always: NixOS's PATH leads there
BLOCKED_MARKERS = (  # what a command prints when the sandbox stopped it
    "read-only file system",
    "network is unreachable",
    "temporary failure in name resolution",
    "could not resolve host",
    "name or service not known",
    "no address associated with hostname",
)
UNTRUSTED = "the only bubblewrap found is not used"


@dataclass(frozen=True)
class Sandbox:
    """The shell's confinement, decided once (`Sandbox()`: none). `active`: commands run under bubblewrap."""

    mode: str = "off"  # the setting: auto, bwrap or off
    active: bool = False
    network: bool = True
    problem: str = ""  # why bubblewrap is not used although wanted
    bwrap: str = ""
    workspace: Path = Path()
    hidden: tuple[Path, ...] = ()

    @classmethod
    def detect(
        cls,
        mode: str,
        *,
        network: bool,
        workspace: Path,
        hidden: Iterable[Path] = (),
        executable: str = "bwrap",
    ) -> Sandbox:
        """Probes bubblewrap once (a few milliseconds) unless `off`."""
        if mode == "off" or sys.platform == "win32":
            problem = "" if mode == "off" else "bubblewrap needs Linux"
            return cls(mode, problem=problem)
        root = workspace.resolve()
        found = find_program(executable, root)
        if found is None:
            passed_over = shutil.which(executable)
            where = "in the workspace, or found through a relative PATH entry"
            untrusted = f"{UNTRUSTED}: {passed_over} ({where})"
            return cls(mode, problem=untrusted if passed_over else "bubblewrap (bwrap) is not installed")
        hide = _hideable(hidden, root)
        sandbox = cls(mode, active=True, network=network, bwrap=found, workspace=root, hidden=hide)
        problem = sandbox.probe()
        if problem:
            return cls(mode, problem=problem, bwrap=found)
        return sandbox

    def probe(self) -> str:
        """Run `true` in the sandbox; the first line of bubblewrap's complaint when it cannot start."""
        try:
            done = subprocess.run(
                self._wrap("true"), stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT
            )
        except subprocess.TimeoutExpired:  # its message would hold the whole command line
            return f"bubblewrap cannot start: it did not finish within {PROBE_TIMEOUT:g} s"
        except OSError as err:
            return f"bubblewrap cannot start: {err.strerror or err}"
        if done.returncode == 0:
            return ""
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = lines[0].removeprefix("bwrap: ") if lines else f"exit code {done.returncode}"
        return f"bubblewrap cannot start here ({why if len(why) <= 200 else why[:199] + '…'})"

    @property
    def status(self) -> str:
        """One line for the bottom bar and /permission, e.g. "sandbox: bwrap, network off"."""
        if self.active:
            return f"sandbox: bwrap, network {'on' if self.network else 'off'}"
        if self.mode == "off":
            return "sandbox: off"
        if self.mode == "bwrap":
            return f"sandbox: unavailable, shell refused ({self.problem})"
        return f"sandbox: off ({self.problem})"

    @property
    def startup_warning(self) -> str:
        """The one line to say at start-up, or "" when nothing is wrong."""
        if self.mode == "bwrap" and not self.active:
            return f"sandbox = bwrap, but {self.problem}: shell commands will be refused"
        unusable = "cannot start" in self.problem or UNTRUSTED in self.problem  # installed, yet not used
        if self.mode == "auto" and not self.active and unusable:
            return f"{self.problem}: shell commands run without a sandbox"
        return ""

    def argv(self, command: str) -> list[str] | None:
        """bubblewrap around `/bin/sh -c command`, or None to run it plainly; ToolError when demanded
        and unavailable."""
        if self.mode == "bwrap" and not self.active:
            raise ToolError(
                f"shell command refused: sandbox = bwrap, but {self.problem} "
                "(install bubblewrap, or set sandbox = auto or off)"
            )
        return self._wrap(command) if self.active else None

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """Without the key variables when confined (`--unsetenv` would leave them in /proc/1/environ)."""
        if not self.active:
            return dict(base)
        return {name: value for name, value in base.items() if name not in SECRET_VARIABLES}

    def _wrap(self, command: str) -> list[str]:
        args = [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        if RUNTIME_DIR.is_dir():  # bubblewrap cannot create it on a read-only root
            args += ["--tmpfs", str(RUNTIME_DIR)]
            for kept in (*PROGRAM_RUNTIME, *(NETWORK_RUNTIME if self.network else ())):
                args += ["--ro-bind-try", kept, kept]
        root = str(self.workspace)
        args += ["--bind", root, root]
        git_dir = _git_dir_inside(self.workspace)
        if git_dir is not None:
            # Hooks and config run unsandboxed at the user's next git command: like Codex, the
            # repository's own metadata stays read-only (one outside the workspace already is).
            args += ["--ro-bind", str(git_dir), str(git_dir)]
        for path in self.hidden:
            if path.is_dir():
                args += ["--tmpfs", str(path)]
            elif path.exists():
                args += ["--ro-bind", "/dev/null", str(path)]
        if not self.network:
            args.append("--unshare-net")
        # Run by root, bubblewrap keeps every capability unless told: a command could then remount /
        # read-write or unmount what hides the keys. Elsewhere the command has none already.
        args += ["--cap-drop", "ALL", "--unshare-pid", "--die-with-parent", "--chdir", root]
        args += ["--", "/bin/sh", "-c", command]
        return args

    def blocked_note(self, output: str) -> str:
        """A line for the tool result when `output` shows the sandbox stopped the command."""
        if not self.active:
            return ""
        lowered = output.lower()
        if not any(marker in lowered for marker in BLOCKED_MARKERS):
            return ""
        network = "on" if self.network else "off"
        return (
            "sandbox: this command ran under bubblewrap (only the workspace, except its .git, and /tmp "
            f"are writable; network {network}); the failure above may be the sandbox blocking it. "
            "Do not retry: ask the user (they can set sandbox_network = true or sandbox = off)."
        )


def _git_dir_inside(workspace: Path) -> Path | None:
    """The workspace's `.git` (after links) when inside it: a directory, or a worktree's "gitdir: …"
    file, which a command could point at hooks of its own."""
    try:
        git_dir = (workspace / ".git").resolve()
        inside = (git_dir.is_dir() or git_dir.is_file()) and git_dir.is_relative_to(workspace)
    except (OSError, RuntimeError):  # a link loop (RuntimeError before Python 3.13)
        return None
    return git_dir if inside else None


def find_program(name: str, workspace: Path) -> str | None:
    """The absolute path of program `name`, never one inside the workspace (the commands it confines
    could rewrite it, and the probe runs it unconfined): only absolute PATH entries are searched."""
    if os.sep in name:
        candidates = [os.path.abspath(name)]
    else:
        entries = os.environ.get("PATH", os.defpath).split(os.pathsep)
        candidates = [os.path.join(entry, name) for entry in entries if os.path.isabs(entry)]
    for candidate in candidates:
        found = shutil.which(candidate)
        if found is not None and not Path(os.path.realpath(found)).is_relative_to(workspace):
            return found
    return None


def _hideable(paths: Iterable[Path], workspace: Path) -> tuple[Path, ...]:
    """The paths to cover, resolved, outermost only, none holding the workspace. One that cannot be
    resolved (a link loop) names nothing readable, and covering it would make bubblewrap fail."""
    resolved: set[Path] = set()
    for path in paths:
        with contextlib.suppress(OSError, RuntimeError):  # RuntimeError: a link loop before 3.13, ~nosuchuser
            resolved.add(path.expanduser().resolve())
    kept: list[Path] = []
    for path in sorted(resolved):
        if not workspace.is_relative_to(path) and not any(path.is_relative_to(outer) for outer in kept):
            kept.append(path)
    return tuple(kept)
