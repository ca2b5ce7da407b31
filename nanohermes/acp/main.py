"""`nanohermes acp` on stdio: logging to stderr, the protocol's own file descriptors, the connection
that routes JSON-RPC to `NanohermesAcpAgent` until stdin closes."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from acp.agent.connection import AgentSideConnection
from pydantic import ValidationError

from nanohermes.acp.server import AgentFactory, NanohermesAcpAgent
from nanohermes.acp.session import one_line
from nanohermes.acp.transport import LineTransport, open_transport, protocol_files
from nanohermes.core.cancel import EXIT_SIGNALS

if TYPE_CHECKING:
    from acp.interfaces import Agent as AcpAgent

    from nanohermes.config.settings import Settings
    from nanohermes.memory import MemoryStore

LOG_FORMAT = "nanohermes acp: %(levelname)s: %(message)s"
log = logging.getLogger("nanohermes.acp")


class _OneLineFormatter(logging.Formatter):
    """Without --verbose an exception logged to stderr is one line, not a traceback."""

    def formatException(self, ei: Any) -> str:  # noqa: N802 - logging's name
        if not ei[0]:
            return super().formatException(ei)
        title = ei[1].title if isinstance(ei[1], ValidationError) else ""
        return f"  {ei[0].__name__}: {one_line(ei[1], title)}"


def serve(
    settings: Settings, factory: AgentFactory, stores: Callable[[Path], MemoryStore | None], *, verbose: bool
) -> int:
    """Serve on stdin/stdout until stdin closes. `stores`: a workspace's memory store."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter((logging.Formatter if verbose else _OneLineFormatter)(LOG_FORMAT))
    logging.basicConfig(handlers=[handler], level=logging.INFO if verbose else logging.WARNING, force=True)
    proto_in, proto_out = protocol_files()
    return asyncio.run(_serve(NanohermesAcpAgent(settings, factory, stores), proto_in, proto_out))


async def _serve(agent: NanohermesAcpAgent, proto_in: Any, proto_out: Any) -> int:
    transport = await open_transport(proto_in, proto_out)
    loop = asyncio.get_running_loop()
    for signum in EXIT_SIGNALS:
        loop.add_signal_handler(signum, _exit_signal, loop, transport, signum)
    # The SDK still counts session/close and session/resume as unstable (the schema no longer does):
    # without the flag it answers them «method not found».
    connection = AgentSideConnection(
        cast("AcpAgent", agent), transport, listening=False, use_unstable_protocol=True
    )
    try:
        await connection.listen()
        await agent.shutdown(lambda: transport.unanswered)
    finally:
        try:
            await asyncio.shield(connection.close())
        except ConnectionError as err:  # a reply that failed as our output went (the SDK logged it)
            log.info("connection closed: %s", err)
    return 0


def _exit_signal(loop: asyncio.AbstractEventLoop, transport: LineTransport, signum: int) -> None:
    """End as at the end of input (turns cancelled and answered, sessions saved); a second: at once."""
    log.warning("%s: saving every session, then exiting", signal.Signals(signum).name)
    for other in EXIT_SIGNALS:
        loop.remove_signal_handler(other)  # back to the default: a second signal ends it at once
    transport.end_input()
