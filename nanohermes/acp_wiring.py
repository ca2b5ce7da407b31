"""Composition root for `nanohermes acp`: every ACP session's agent built from the same parts as the
REPL's (wiring.build_agent), one model client, and one memory store per project. Part of the `cli`
layer, imported only for `nanohermes acp`."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from nanohermes.acp.session import Opened
from nanohermes.lean_imports import import_httpx
from nanohermes.session import SessionFile
from nanohermes.session_lock import SessionLock
from nanohermes.wiring import AgentParts, build_agent, open_store

if TYPE_CHECKING:
    from nanohermes.mcp_config import McpServerConfig
    from nanohermes.memory import MemoryStore
    from nanohermes.options import CliOptions
    from nanohermes.protocols import Approver
    from nanohermes.settings import Settings
    from nanohermes.tools.files import FileTools


def run_acp(options: CliOptions, settings: Settings) -> int:
    """`nanohermes acp`: every session's agent is built here from one model client and the memory
    store of its workspace's project (one store per project, shared by that project's sessions).
    A session holds its lock and its MCP servers (the configured ones and the client's) until the
    client closes it or the server ends."""
    import_httpx()  # before the model client: without httpx's command-line client
    from nanohermes.acp.main import serve
    from nanohermes.llm import ChatClient

    client = ChatClient.from_settings(settings)
    stores: dict[Path, MemoryStore | None] = {}
    guard = threading.Lock()
    opened: set[Callable[[], None]] = set()  # the close of every open session: run at exit

    def store_for(workspace: Path) -> MemoryStore | None:
        with guard:
            if workspace not in stores:
                notice = lambda message: print(f"nanohermes acp: {message}", file=sys.stderr)  # noqa: E731
                stores[workspace] = open_store(settings, notice, workspace)
            return stores[workspace]

    def open_session(
        session_path: Path,
        workspace: Path,
        approver: Approver,
        files: Callable[[Path, int], FileTools] | None,
        mcp_servers: Mapping[str, McpServerConfig],
    ) -> Opened:
        session = SessionFile(session_path)
        lock = SessionLock.acquire(session_path)
        try:
            resumed = session.load() if session.exists() else None
            secret_files = options.secret_files
            parts = AgentParts(client, store_for(workspace), approver, options.verbose, secret_files, files)
            servers = {**settings.mcp_servers, **mcp_servers}  # the client's win a name clash
            built = build_agent(
                settings, parts, workspace=workspace, session=session, resumed=resumed, mcp_servers=servers
            )
        except BaseException:
            lock.release()
            raise

        def close() -> None:
            with guard:
                opened.discard(close)
            try:
                if built.mcp is not None:
                    built.mcp.close()
            finally:
                lock.release()

        with guard:
            opened.add(close)
        return Opened(built.agent, close)

    try:
        return serve(settings, open_session, store_for, verbose=options.verbose)
    finally:
        for close in list(opened):
            close()
        client.close()
