"""Composition root: the REPL and `-p` (`run_chat`) and `nanohermes acp` (`run_acp`). The UI gets
`build_runtime` as a callable (it never imports this module), so tests can hand it fakes."""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nanohermes.app.agent_wiring import AgentParts, OpenedSession, Runtime, build_agent, open_locked
from nanohermes.core.errors import ConfigError, StoreError
from nanohermes.core.events import Note

if TYPE_CHECKING:
    from nanohermes.acp.session import Opened
    from nanohermes.config.mcp_config import McpServerConfig
    from nanohermes.config.options import CliOptions
    from nanohermes.config.settings import Settings
    from nanohermes.core.protocols import Approver
    from nanohermes.llm import ChatClient
    from nanohermes.local.server import LocalEndpoint
    from nanohermes.memory import MemoryStore
    from nanohermes.tools.files import FileTools
    from nanohermes.ui.seams import RuntimeBuilder

LOCAL_COMPACT_THRESHOLD = 16_000
"""The bundled model has an 8k-token context: compact much earlier than the 120,000-char default."""
LOCAL_MAX_OUTPUT_TOKENS = 1024
"""SmolLM2-135M sometimes repeats itself until its 8k context is full: minutes on a laptop CPU."""


def import_httpx() -> None:
    """Import httpx without `httpx._main`, its command-line client, which loads click, rich and
    pygments (a fifth of what `-p` imports) whenever click is installed. A placeholder stands in while
    httpx loads; it is removed at once, so a later `import httpx._main` gets the real module."""
    if "httpx" in sys.modules or "httpx._main" in sys.modules:
        return
    placeholder = types.ModuleType("httpx._main", "nanohermes: httpx's CLI is not loaded")
    sys.modules["httpx._main"] = placeholder
    try:
        import httpx  # noqa: F401  (the import is the point)
    finally:
        if sys.modules.get("httpx._main") is placeholder:
            del sys.modules["httpx._main"]


class _NoticeRelay:
    """Store notices (e.g. "memory.json was unreadable, moved to …") → agent notes, even early ones."""

    def __init__(self) -> None:
        self.pending: list[Note] = []
        self.target: Callable[[Note], None] = self.pending.append

    def __call__(self, message: str) -> None:
        self.target(Note(message, "warning"))

    def attach(self, target: Callable[[Note], None]) -> None:
        self.target = target
        for note in self.pending:
            target(note)


def open_session(options: CliOptions, settings: Settings) -> OpenedSession:
    """Lock and read the session to use (`--session`'s, `--continue`'s or a new one), so that a bad
    or busy session file is reported before any prompt. Raises SessionError or ConfigError."""
    from nanohermes.sessions.paths import latest_session, new_session_path, resolve_session_path

    sessions_dir = settings.sessions_dir
    path: Path | None = None
    notices: tuple[str, ...] = ()
    if options.session is not None:
        path = resolve_session_path(sessions_dir, options.session)
    elif options.continue_last:
        path = latest_session(sessions_dir, Path.cwd())
        if path is None:
            notices = (f"no earlier session in this workspace ({Path.cwd()}); starting a new one",)
    return open_locked(path or new_session_path(sessions_dir), notices)


def build_runtime(
    options: CliOptions,
    settings: Settings,
    approver: Approver | None,
    local: LocalEndpoint | None = None,
    opened: OpenedSession | None = None,
) -> Runtime:
    """The runtime on the session `opened` (else opened here)."""
    import_httpx()  # before the model client: without httpx's command-line client
    from nanohermes.llm import ChatClient

    relay = _NoticeRelay()
    if opened is None:  # else its notices were shown with the preview
        opened = open_session(options, settings)
        for notice in opened.notices:
            relay(notice)
    store = open_store(settings, relay, Path.cwd())
    client = ChatClient.from_settings(settings, stopped=local.stopped if local is not None else None)
    parts = AgentParts(client, store, approver, options)
    runtime = build_agent(settings, parts, opened, workspace=Path.cwd())
    relay.attach(runtime.agent.post_note)
    return runtime


def apply_yes(options: CliOptions, settings: Settings) -> Settings:
    """`--yes` means permission `auto` for this run; it never widens a configured `read-only`."""
    if not options.yes:
        return settings
    if settings.permission == "read-only":  # given as a flag, in the config file or the environment
        raise ConfigError("--yes cannot widen permission read-only", "drop --yes, or give --permission auto")
    return settings.with_changes(permission="auto")


def open_store(settings: Settings, relay: Callable[[str], None], workspace: Path) -> MemoryStore | None:
    """The store for this workspace's project (SPEC §3.9), read now so that a notice about it
    («memory.json was unreadable, moved to …») shows at start-up, not after the first answer."""
    if not settings.memory:
        return None
    from nanohermes.memory import workspace_store

    store = workspace_store(
        settings.memory_dir,
        workspace,
        max_entries=settings.memory_max_entries,
        on_notice=relay,
        secrets=(settings.api_key_value() or "",),  # the store drops an empty one
        team_distill=settings.memory_team_distill,
    )
    try:
        store.load()
        if store.team is not None:
            store.team.load()
    except StoreError as err:
        relay(f"memory not available: {err.one_line()}")
    return store


def run_chat(options: CliOptions, settings: Settings) -> int:
    settings = apply_yes(options, settings)
    _require_terminal(options, settings)
    endpoint: LocalEndpoint | None = None
    with contextlib.ExitStack() as stack:
        if options.local:
            from nanohermes.local.server import MODEL_NAME, local_endpoint

            if "model" in options.overrides:  # it was ignored: the local server serves one model
                raise ConfigError(f"--local serves its bundled model {MODEL_NAME}", "drop --model")
            endpoint = stack.enter_context(local_endpoint(settings.state_dir, options.verbose))
            settings = settings.with_changes(
                base_url=endpoint.base_url,
                model=endpoint.model,
                distill_model=None,
                compact_threshold_chars=min(settings.compact_threshold_chars, LOCAL_COMPACT_THRESHOLD),
                max_output_tokens=settings.max_output_tokens or LOCAL_MAX_OUTPUT_TOKENS,
            )
            if options.verbose:
                print(
                    f"nanohermes: local model {endpoint.model} at {endpoint.base_url} "
                    f"(pid {endpoint.pid}, log {endpoint.log_path})",
                    file=sys.stderr,
                    flush=True,
                )
        if options.prompt is not None:
            from nanohermes.ui.oneshot import run_oneshot

            # `local`: names the server if it dies
            return run_oneshot(options, settings, functools.partial(build_runtime, local=endpoint))
        from nanohermes.ui.repl import run_repl
        from nanohermes.ui.seams import ResumePreview

        opened: OpenedSession | None = None
        preview: ResumePreview | None = None  # shown while the runtime is built
        if options.session is not None or options.continue_last:
            opened = open_session(options, settings)
            stack.callback(opened.lock.release)  # also when the background build fails
            messages = tuple(opened.data.messages) if opened.data else ()
            preview = ResumePreview(opened.session.path.stem, messages, opened.notices)
        builder: RuntimeBuilder = functools.partial(build_runtime, local=endpoint, opened=opened)
        return run_repl(options, settings, builder, preview=preview)


def _require_terminal(options: CliOptions, settings: Settings) -> None:
    """Piped into (`echo hi | nanohermes`), the REPL drew escape sequences into the output and took
    each line as a message: one line instead, pointing at `-p -`. (With no model it only explains.)"""
    if options.prompt is not None or not (settings.model or options.local):
        return
    from nanohermes.ui.safe_text import is_terminal

    if not is_terminal(sys.stdin):
        raise ConfigError(
            "standard input is not a terminal, and the REPL needs one",
            "to send piped text as one prompt: echo 'fix the tests' | nanohermes -p -",
        )


def run_acp(options: CliOptions, settings: Settings) -> int:
    import_httpx()  # before the model client: without httpx's command-line client
    from nanohermes.acp.main import serve
    from nanohermes.llm import ChatClient

    client = ChatClient.from_settings(settings)
    sessions = _Sessions(options, settings, client)
    try:
        return serve(settings, sessions.open, sessions.store_for, verbose=options.verbose)
    finally:
        sessions.close_all()
        client.close()


@dataclass
class _Sessions:
    """The server's open sessions and its memory stores, shared by the server's threads."""

    options: CliOptions
    settings: Settings
    client: ChatClient
    stores: dict[Path, MemoryStore | None] = field(default_factory=dict)
    guard: threading.Lock = field(default_factory=threading.Lock)
    opened: set[Callable[[], None]] = field(default_factory=set)  # each open session's close: run at exit

    def store_for(self, workspace: Path) -> MemoryStore | None:
        with self.guard:
            if workspace not in self.stores:
                notice = lambda message: print(f"nanohermes acp: {message}", file=sys.stderr)  # noqa: E731
                self.stores[workspace] = open_store(self.settings, notice, workspace)
            return self.stores[workspace]

    def open(
        self,
        session_path: Path,
        workspace: Path,
        approver: Approver,
        files: Callable[[Path, int], FileTools] | None,
        mcp_servers: Mapping[str, McpServerConfig],
    ) -> Opened:
        """A session's agent, holding the session's lock until its close is called."""
        from nanohermes.acp.session import Opened

        opened = open_locked(session_path)
        try:
            store = self.store_for(workspace)
            parts = AgentParts(self.client, store, approver, self.options, files)
            runtime = build_agent(self.settings, parts, opened, workspace=workspace, mcp_servers=mcp_servers)
        except BaseException:
            opened.lock.release()
            raise

        def close() -> None:
            with self.guard:
                self.opened.discard(close)
            runtime.close()

        with self.guard:
            self.opened.add(close)
        return Opened(runtime.agent, close)

    def close_all(self) -> None:
        with self.guard:
            still_open = list(self.opened)
        for close in still_open:
            close()
