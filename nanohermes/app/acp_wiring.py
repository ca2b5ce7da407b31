"""Composition root for `nanohermes acp`: every ACP session's agent built from the same parts as the
REPL's (agent_wiring.build_agent), one model client, and one memory store per project. Part of the `cli`
layer, imported only for `nanohermes acp`."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from nanohermes.acp.session import Opened
from nanohermes.app.agent_wiring import AgentParts, build_agent
from nanohermes.app.lean_imports import import_httpx
from nanohermes.app.wiring import open_locked, open_store

if TYPE_CHECKING:
    from nanohermes.config.mcp_config import McpServerConfig
    from nanohermes.config.options import CliOptions
    from nanohermes.config.settings import Settings
    from nanohermes.core.protocols import Approver
    from nanohermes.llm import ChatClient
    from nanohermes.memory import MemoryStore
    from nanohermes.tools.files import FileTools


def run_acp(options: CliOptions, settings: Settings) -> int:
    """`nanohermes acp`: serve the editor on stdio; the sessions still open are closed at the end."""
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


class _Sessions:
    """The server's open sessions and its memory stores, shared by the server's threads."""

    def __init__(self, options: CliOptions, settings: Settings, client: ChatClient) -> None:
        self.options = options
        self.settings = settings
        self.client = client
        self.stores: dict[Path, MemoryStore | None] = {}
        self.guard = threading.Lock()
        self.opened: set[Callable[[], None]] = set()  # the close of every open session: run at exit

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
        settings, options = self.settings, self.options
        session, resumed, lock = open_locked(session_path)
        try:
            store = self.store_for(workspace)
            parts = AgentParts(self.client, store, approver, options.verbose, options.secret_files, files)
            servers = {**settings.mcp_servers, **mcp_servers}  # the client's win a name clash
            runtime = build_agent(
                settings,
                parts,
                workspace=workspace,
                session=session,
                resumed=resumed,
                lock=lock,
                mcp_servers=servers,
            )
        except BaseException:
            lock.release()
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
