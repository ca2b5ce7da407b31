"""One ACP session: a nanohermes Agent (own messages, workspace, session file) driven by prompts.

A prompt runs the agent on a worker thread of its own. The worker never touches the connection: it
puts events and approval questions on the turn's inbox (thread-safe hand-over), and the
prompt's coroutine sends them in order — so a `tool_call` is always announced before the permission
request about it, and every update of a turn goes out before the prompt's answer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import RequestError, schema
from acp.helpers import (
    plan_entry,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from pydantic import ValidationError

from nanohermes.acp import convert
from nanohermes.acp.inbox import Inbox
from nanohermes.acp.workers import Workers
from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import Cancelled, ToolError
from nanohermes.core.events import (
    Compacted,
    Event,
    Note,
    PlanUpdated,
    ReasoningDelta,
    Retrying,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from nanohermes.core.protocols import ApprovalRequest, Decision
from nanohermes.core.types import ToolCall

if TYPE_CHECKING:
    from acp.interfaces import Client

    from nanohermes.agent.loop import Agent

log = logging.getLogger("nanohermes.acp")
EventSource = Callable[[CancelToken], Iterator[Event]]

STOP_REASONS: dict[str, schema.StopReason] = {
    "done": "end_turn",
    "max_iterations": "max_turn_requests",
    "interrupted": "cancelled",
    "length": "max_tokens",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}
PERMISSION_OPTIONS = [
    schema.PermissionOption(option_id="allow_once", name="Allow", kind="allow_once"),
    schema.PermissionOption(option_id="allow_always", name="Always allow", kind="allow_always"),
    schema.PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    schema.PermissionOption(option_id="reject_always", name="Always reject", kind="reject_always"),
]


class Bridge:
    """Worker threads reach the client through this: run a coroutine on the server's loop and wait,
    giving up at once when the turn is cancelled."""

    def __init__(self, loop: asyncio.AbstractEventLoop, client: Client, session_id: str) -> None:
        self.loop, self.client, self.session_id = loop, client, session_id
        self.turn_cancel: Callable[[], CancelToken | None] = lambda: None
        """The running turn's token (set by its AcpSession): a call given none (the diff shown for
        an approval reads the file through the editor) still ends when the turn is cancelled."""

    def call(self, make: Callable[[], Any], cancel: object | None = None) -> Any:
        token = cancel if isinstance(cancel, CancelToken) else self.turn_cancel()
        if token is not None and token.cancelled:
            raise Cancelled()
        future = asyncio.run_coroutine_threadsafe(make(), self.loop)
        unregister = token.on_cancel(lambda: _cancel(future)) if token else (lambda: None)
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            raise Cancelled() from None
        finally:
            unregister()

    # -- ClientFiles (nanohermes.acp.clientfs) ---------------------------------------------------

    def read_text(self, path: Path, cancel: object | None = None) -> str:
        try:
            reply = self.call(
                lambda: self.client.read_text_file(session_id=self.session_id, path=str(path)), cancel
            )
        except (RequestError, ValidationError) as err:
            raise ToolError(f"the editor could not read {path}: {reply_problem(err)}") from None
        return str(reply.content)

    def write_text(self, path: Path, content: str, cancel: object | None = None) -> None:
        try:
            self.call(
                lambda: self.client.write_text_file(
                    session_id=self.session_id, path=str(path), content=content
                ),
                cancel,
            )
        except (RequestError, ValidationError) as err:
            raise ToolError(f"the editor could not write {path}: {reply_problem(err)}") from None


@dataclass
class _Ask:
    """A worker's approval question, answered by the prompt coroutine."""

    request: ApprovalRequest
    answer: concurrent.futures.Future[Decision] = field(default_factory=concurrent.futures.Future)


class _Done:
    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


_Item = Event | _Ask | _Done


@dataclass
class _Turn:
    inbox: Inbox[_Item]
    cancel: CancelToken = field(default_factory=CancelToken)
    asking: asyncio.Task[Any] | None = None
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Opened:
    """What the composition root built for one session: its agent, and `close` (idempotent) for
    what the session holds besides — its MCP servers (stdio ones killed) and its session lock."""

    agent: Agent
    close: Callable[[], None]


class AcpSession:
    """A session: the agent, its mode, its running turn (at most one) and its tool-call ids."""

    def __init__(
        self, session_id: str, workspace: Path, bridge: Bridge, mode: str, workers: Workers | None = None
    ) -> None:
        self.id, self.workspace, self.bridge, self.mode = session_id, workspace, bridge, mode
        bridge.turn_cancel = lambda: self.turn.cancel if self.turn is not None else None
        self.workers = workers or Workers()
        self.agent: Agent | None = None
        self.release: Callable[[], None] = lambda: None
        """Closes the session's MCP servers and releases its lock (Opened.close)."""
        self.servers: object = None
        """The MCP servers it was opened with (a load asking for others reopens it)."""
        self.turn: _Turn | None = None
        self._rejected: set[str] = set()
        self._live: dict[str, tuple[str, str]] = {}
        """model call id → (ACP tool call id, tool name), for calls shown and not yet finished."""
        self._count = 0
        self._title = ""
        """The title last sent (`session_info_update`): the first user message, as session/list shows."""

    # -- approvals (called on worker threads by the tool runner) ---------------------------------

    def approve(self, request: ApprovalRequest) -> Decision:
        turn = self.turn
        if turn is None or turn.cancel.cancelled:
            raise Cancelled()
        if request.tool in self._rejected:
            return Decision.NO
        ask = _Ask(request)
        turn.inbox.put(ask)
        unregister = turn.cancel.on_cancel(lambda: _cancel(ask.answer))
        try:
            return ask.answer.result()
        except concurrent.futures.CancelledError:
            raise Cancelled() from None
        finally:
            unregister()

    # -- a prompt --------------------------------------------------------------------------------

    async def run(self, source: EventSource) -> schema.StopReason:
        """Run `source` (a turn, /compact, …) on a worker and stream its events; the stop reason."""
        if self.turn is not None:
            raise RequestError.invalid_request({"details": f"session {self.id} is already running a prompt"})
        turn = _Turn(Inbox(self.bridge.loop))
        self.turn = turn
        done = False
        try:
            await self._send_notes()
            self.workers.run(lambda: self._work(source, turn))
            finished = await self._pump(turn)
            done = True
        except ConnectionError:  # stdin closed: no update reaches the client, its answer still may
            log.info("session %s: the client has gone; the turn is cancelled", self.id)
            return "cancelled"
        finally:
            if not done:  # the client went away or the worker failed: stop the agent
                turn.cancel.cancel()
            self.turn = None
        await self._close_open_calls(turn.cancel.cancelled)
        await self._send_notes()
        await self._send_title()
        if turn.cancel.cancelled:
            return "cancelled"
        if finished.reason == "error":
            raise RequestError(-32603, "; ".join(turn.errors) or "the turn failed", {"reason": "error"})
        return STOP_REASONS.get(finished.reason, "end_turn")

    def cancel(self) -> None:
        turn = self.turn
        if turn is None:
            return
        turn.cancel.cancel()
        if turn.asking is not None:
            turn.asking.cancel()

    def _work(self, source: EventSource, turn: _Turn) -> None:
        error: BaseException | None = None
        try:
            for event in source(turn.cancel):
                turn.inbox.put(event)
        except Exception as err:  # a bug must end this prompt only, never the process
            log.exception("session %s: the turn failed", self.id)
            error = err
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is gone (shutting down): nobody listens
                turn.inbox.put(_Done(error))

    async def _pump(self, turn: _Turn) -> TurnFinished:
        while True:
            item = await turn.inbox.get()
            if isinstance(item, _Done):
                if item.error is not None:
                    raise RequestError(-32603, f"internal error: {type(item.error).__name__}: {item.error}")
                return TurnFinished(False, "interrupted")
            if isinstance(item, _Ask):
                await self._ask(turn, item)
                continue
            if isinstance(item, TurnFinished):  # the last event: answer now, not once the worker is free
                return item
            for update in self._updates(item, turn):
                await self.bridge.client.session_update(session_id=self.id, update=update)

    async def _ask(self, turn: _Turn, ask: _Ask) -> None:
        request = ask.request
        call = request.call or ToolCall(f"ask{self._count}", request.tool)
        acp_id, fresh = self._tool_id(call)
        if fresh:
            await self.bridge.client.session_update(
                session_id=self.id, update=convert.announce(acp_id, call, self.workspace, "pending")
            )
        tool_call = convert.permission_call(acp_id, call, self.workspace)
        tool_call.title = request.title
        turn.asking = asyncio.ensure_future(
            self.bridge.client.request_permission(
                session_id=self.id, tool_call=tool_call, options=PERMISSION_OPTIONS
            )
        )
        decision = Decision.NO
        try:
            await asyncio.wait({turn.asking})
            if not turn.asking.cancelled() and turn.asking.exception() is None:
                decision = self._decision(request, turn.asking.result())
            elif not turn.asking.cancelled():
                log.warning("permission request failed: %s", reply_problem(turn.asking.exception()))
        finally:
            turn.asking = None
            if not ask.answer.done():
                ask.answer.set_result(decision)

    def _decision(self, request: ApprovalRequest, response: schema.RequestPermissionResponse) -> Decision:
        outcome = response.outcome
        if not isinstance(outcome, schema.AllowedOutcome):
            return Decision.NO  # cancelled counts as rejected
        chosen = outcome.option_id
        if chosen == "reject_always":
            self._rejected.add(request.tool)
        return {"allow_once": Decision.YES, "allow_always": Decision.ALWAYS}.get(chosen, Decision.NO)

    # -- events → session/update -----------------------------------------------------------------

    def _tool_id(self, call: ToolCall) -> tuple[str, bool]:
        """(ACP id, first time shown): ids are unique per session (models reuse `call_1` every turn)."""
        if call.id in self._live:
            return self._live[call.id][0], False
        self._count += 1
        acp_id = f"{self._count}-{call.id}"
        self._live[call.id] = (acp_id, call.name)
        return acp_id, True

    def _updates(self, event: Event | _Ask, turn: _Turn) -> Iterator[Any]:
        if isinstance(event, TextDelta):
            yield update_agent_message_text(event.text)
        elif isinstance(event, ReasoningDelta):
            yield update_agent_thought_text(event.text)
        elif isinstance(event, ToolStarted):
            acp_id, fresh = self._tool_id(event.call)
            yield (
                convert.announce(acp_id, event.call, self.workspace, "in_progress")
                if fresh
                else update_tool_call(acp_id, status="in_progress")
            )
        elif isinstance(event, ToolFinished):
            yield from self._finished(event)
        elif isinstance(event, Note):
            yield from self._note(event, turn)
        elif isinstance(event, Compacted):
            saved = event.before_chars - event.after_chars
            yield update_agent_message_text(f"\n\n_context compacted: {saved:,} characters saved_\n\n")
        elif isinstance(event, PlanUpdated):
            yield update_plan(plan_entry(step.step, status=step.status) for step in event.steps)
        elif isinstance(event, Retrying):
            log.info("session %s: retrying in %.1f s (%s)", self.id, event.delay, event.reason)

    def _finished(self, event: ToolFinished) -> Iterator[Any]:
        result = event.result
        call = ToolCall(result.call_id, result.name)
        acp_id, fresh = self._tool_id(call)
        if fresh:  # refused or invalid before dispatch: show it, then its outcome
            yield convert.announce(acp_id, call, self.workspace, "pending")
        self._live.pop(result.call_id, None)
        yield convert.finish(acp_id, result.name, result)

    def _note(self, note: Note, turn: _Turn) -> Iterator[Any]:
        if note.level == "error":
            turn.errors.append(note.text)
        elif note.level == "warning":
            yield update_agent_message_text(f"\n\n_{note.text}_\n\n")
        else:
            log.info("session %s: %s", self.id, note.text)

    async def _close_open_calls(self, cancelled: bool) -> None:
        """Calls shown but never finished (a sub-agent's approvals, a cut turn) are closed."""
        live, self._live = self._live, {}
        for acp_id, _ in live.values():
            status: schema.ToolCallStatus = "failed" if cancelled else "completed"
            await self.bridge.client.session_update(
                session_id=self.id, update=update_tool_call(acp_id, status=status)
            )

    async def _send_title(self) -> None:
        """The editor's thread title, once the conversation has one (again after /reset)."""
        from nanohermes.sessions.store import title_of

        title = title_of(self.agent.messages) if self.agent is not None else ""
        if title and title != self._title:
            self._title = title
            now = datetime.now().astimezone().isoformat(timespec="seconds")
            info = schema.SessionInfoUpdate(session_update="session_info_update", title=title, updated_at=now)
            await self.bridge.client.session_update(session_id=self.id, update=info)

    async def _send_notes(self) -> None:
        """What happened in the background (an MCP server that failed, an unreadable AGENTS.md, a
        memory not saved) is shown in the turn, as the REPL prints it; details go to the log."""
        if self.agent is None:
            return
        for note in self.agent.drain_background_events():
            if not isinstance(note, Note):
                continue
            if note.level in ("warning", "error"):
                log.warning("session %s: %s", self.id, note.text)
                update = update_agent_message_text(f"\n\n_{note.text}_\n\n")
                await self.bridge.client.session_update(session_id=self.id, update=update)
            else:
                log.info("session %s: %s", self.id, note.text)


def reply_problem(err: BaseException | None) -> str:
    """One line for a client's failed or malformed reply (pydantic's report spans several)."""
    if isinstance(err, ValidationError) and err.errors():
        return f"malformed reply ({first_validation_error(err, 'the reply')})"
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def first_validation_error(err: ValidationError, whole: str) -> str:
    """`where: what` of pydantic's first complaint (`whole` when it is about the value itself)."""
    first = err.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or whole
    return f"{where}: {first['msg']}"


def _cancel(future: concurrent.futures.Future[Any]) -> None:
    future.cancel()
