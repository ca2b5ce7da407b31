"""One ACP session: an Agent whose prompts each run on a thread of its own. That thread never
touches the connection: the prompt's coroutine sends what it hands over, in order."""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import functools
import logging
import threading
import time
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
from nanohermes.core.cancel import CancelToken, result_of
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
from nanohermes.sessions.store import title_of

if TYPE_CHECKING:
    from acp.interfaces import Client

    from nanohermes.agent.loop import Agent

log = logging.getLogger("nanohermes.acp")
EventSource = Callable[[CancelToken], Iterator[Event]]

STOP_REASONS: dict[str, schema.StopReason] = {  # any other reason (done) is end_turn
    "max_iterations": "max_turn_requests",
    "interrupted": "cancelled",
    "length": "max_tokens",
    "refusal": "refusal",
}
PERMISSION_OPTIONS = [
    schema.PermissionOption(option_id=kind, name=name, kind=kind)
    for kind, name in [
        ("allow_once", "Allow"),
        ("allow_always", "Always allow"),
        ("reject_once", "Reject"),
        ("reject_always", "Always reject"),
    ]
]
DECISIONS = {"allow_once": Decision.YES, "allow_always": Decision.ALWAYS}  # any other answer rejects
TEXT_INTERVAL = 0.008  # seconds between two text updates of a turn (about one editor frame)


@dataclass
class _Ask:
    request: ApprovalRequest
    answer: concurrent.futures.Future[Decision] = field(default_factory=concurrent.futures.Future)


_Item = Event | _Ask | BaseException | None  # the last item: None (done) or what the thread raised


class _Turn:
    """A running prompt; streamed text is batched (a fast model's burst is a few messages, not hundreds)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.cancel = CancelToken()
        self.errors: list[str] = []
        self._loop = loop
        self._items: collections.deque[_Item] = collections.deque()
        self._ready = asyncio.Event()
        self._last_text = 0.0

    def put(self, item: _Item) -> None:
        self._items.append(item)
        self._loop.call_soon_threadsafe(self._ready.set)

    async def get(self) -> _Item:
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        item = self._items.popleft()
        if not isinstance(item, TextDelta | ReasoningDelta):
            return item
        if (left := self._last_text + TEXT_INTERVAL - time.monotonic()) > 0:
            await asyncio.sleep(left)  # a burst: what streams in for the rest of the frame joins it
        self._last_text = time.monotonic()
        pieces = [item.text]
        while self._items and isinstance(more := self._items[0], type(item)):
            pieces.append(more.text)
            self._items.popleft()
        return type(item)("".join(pieces))


@dataclass(frozen=True)
class Opened:
    """The composition root's session; `close` (idempotent) closes its MCP servers and session lock."""

    agent: Agent
    close: Callable[[], None]


class AcpSession:
    """`approve`, `read_text` and `write_text` are called on the turn's thread."""

    def __init__(self, session_id: str, workspace: Path, client: Client, mode: str) -> None:
        self.id, self.workspace, self.client, self.mode = session_id, workspace, client, mode
        self.loop = asyncio.get_running_loop()
        self.agent: Agent | None = None
        self.release: Callable[[], None] = lambda: None  # Opened.close
        self.servers: object = None  # those it was opened with: a load asking for others reopens it
        self.turn: _Turn | None = None
        self._rejected: set[str] = set()
        self._live: dict[str, str] = {}  # model call id → ACP id, for calls shown and not finished
        self._count = 0
        self._title = ""  # the last sent

    def approve(self, request: ApprovalRequest) -> Decision:
        turn = self.turn
        if turn is None or turn.cancel.cancelled:
            raise Cancelled()
        if request.tool in self._rejected:
            return Decision.NO
        ask = _Ask(request)
        turn.put(ask)
        return result_of(ask.answer, turn.cancel)

    def read_text(self, path: Path, cancel: CancelToken | None = None) -> str:
        return str(self._call(self.client.read_text_file, "read", path, cancel).content)

    def write_text(self, path: Path, content: str) -> None:
        self._call(functools.partial(self.client.write_text_file, content=content), "write", path)

    def _call(
        self, request: Callable[..., Any], verb: str, path: Path, cancel: CancelToken | None = None
    ) -> Any:
        """`request`'s reply; `cancel` defaults to the turn's (an approval's diff reads the editor too)."""
        token = cancel or (self.turn.cancel if self.turn else None)
        if token is not None and token.cancelled:
            raise Cancelled()
        try:
            asked = asyncio.run_coroutine_threadsafe(request(session_id=self.id, path=str(path)), self.loop)
            return result_of(asked, token)
        except (RequestError, ValidationError) as err:
            raise ToolError(f"the editor could not {verb} {path}: {reply_problem(err)}") from None

    async def run(self, source: EventSource) -> schema.StopReason:
        """Run `source` (a turn, /compact, …) on a thread and stream its events."""
        if self.turn is not None:
            raise RequestError.invalid_request({"details": f"session {self.id} is already running a prompt"})
        turn = self.turn = _Turn(self.loop)
        try:
            await self._send_notes()
            threading.Thread(
                target=self._work, args=(source, turn), name=f"acp-{self.id}", daemon=True
            ).start()
            finished = await self._pump(turn)
        except BaseException as err:  # the client went away or the thread failed: stop the agent
            turn.cancel.cancel()
            if not isinstance(err, ConnectionError):
                raise
            log.info("session %s: the client has gone; the turn is cancelled", self.id)
            return "cancelled"  # stdin closed: no update reaches the client, its answer still may
        finally:
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
        if self.turn is not None:
            self.turn.cancel.cancel()

    def _work(self, source: EventSource, turn: _Turn) -> None:
        outcome: BaseException | None = None
        try:
            for event in source(turn.cancel):
                turn.put(event)
        except Exception as err:  # a bug must end this prompt only, never the process
            log.exception("session %s: the turn failed", self.id)
            outcome = err
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is gone (shutting down): nobody listens
                turn.put(outcome)

    async def _pump(self, turn: _Turn) -> TurnFinished:
        while True:
            item = await turn.get()
            if item is None:
                return TurnFinished(False, "interrupted")
            if isinstance(item, BaseException):
                raise RequestError(-32603, f"internal error: {type(item).__name__}: {item}")
            if isinstance(item, _Ask):
                await self._ask(turn, item)
            elif isinstance(item, TurnFinished):  # the last event: answer now, not once the thread ends
                return item
            else:
                for update in self._updates(item, turn):
                    await self.send(update)

    async def _ask(self, turn: _Turn, ask: _Ask) -> None:
        request = ask.request
        call = request.call or ToolCall(f"ask{self._count}", request.tool)
        acp_id, shown = self._show(call, "pending")
        for update in shown:
            await self.send(update)
        tool_call = convert.permission_call(acp_id, call, self.workspace, request.title)
        asking = asyncio.ensure_future(
            self.client.request_permission(
                session_id=self.id, tool_call=tool_call, options=PERMISSION_OPTIONS
            )
        )
        # a cancelled turn cancels its question: a rejection
        unregister = turn.cancel.on_cancel(lambda: self.loop.call_soon_threadsafe(asking.cancel))
        decision = Decision.NO
        try:
            await asyncio.wait({asking})
            if asking.cancelled():
                pass
            elif asking.exception() is not None:
                log.warning("permission request failed: %s", reply_problem(asking.exception()))
            elif isinstance(outcome := asking.result().outcome, schema.AllowedOutcome):
                if outcome.option_id == "reject_always":
                    self._rejected.add(request.tool)
                decision = DECISIONS.get(outcome.option_id, Decision.NO)
        finally:
            unregister()
            if not ask.answer.done():
                ask.answer.set_result(decision)

    async def send(self, update: Any) -> None:
        await self.client.session_update(session_id=self.id, update=update)

    def _show(self, call: ToolCall, status: schema.ToolCallStatus) -> tuple[str, list[Any]]:
        """The call's ACP id (unique per session: models reuse `call_1` every turn), and the update
        announcing it when it is new."""
        if call.id in self._live:
            return self._live[call.id], []
        self._count += 1
        acp_id = self._live[call.id] = f"{self._count}-{call.id}"
        return acp_id, [convert.announce(acp_id, call, self.workspace, status)]

    def _updates(self, event: Event, turn: _Turn) -> Iterator[Any]:
        if isinstance(event, TextDelta):
            yield update_agent_message_text(event.text)
        elif isinstance(event, ReasoningDelta):
            yield update_agent_thought_text(event.text)
        elif isinstance(event, ToolStarted):
            acp_id, shown = self._show(event.call, "in_progress")
            yield from shown or [update_tool_call(acp_id, status="in_progress")]
        elif isinstance(event, ToolFinished):
            call = ToolCall(event.result.call_id, event.result.name)
            acp_id, shown = self._show(call, "pending")  # new: refused or invalid before dispatch
            yield from shown
            del self._live[call.id]
            yield convert.finish(acp_id, call.name, event.result)
        elif isinstance(event, Note) and event.level == "error":
            turn.errors.append(event.text)
        elif isinstance(event, Note):
            yield from self._note(event)
        elif isinstance(event, Compacted):
            saved = event.before_chars - event.after_chars
            yield update_agent_message_text(f"\n\n_context compacted: {saved:,} characters saved_\n\n")
        elif isinstance(event, PlanUpdated):
            yield update_plan(plan_entry(step.step, status=step.status) for step in event.steps)
        elif isinstance(event, Retrying):
            log.info("session %s: retrying in %.1f s (%s)", self.id, event.delay, event.reason)

    def _note(self, note: Note) -> Iterator[Any]:
        """A warning is shown in the thread, in italics, as the REPL prints it; the rest is logged."""
        if note.level in ("warning", "error"):
            yield update_agent_message_text(f"\n\n_{note.text}_\n\n")
        else:
            log.info("session %s: %s", self.id, note.text)

    async def _close_open_calls(self, cancelled: bool) -> None:
        """Calls shown but never finished (a sub-agent's approvals, a cut turn) are closed."""
        live, self._live = self._live, {}
        for acp_id in live.values():
            await self.send(update_tool_call(acp_id, status="failed" if cancelled else "completed"))

    async def _send_title(self) -> None:
        """The editor's thread title, once the conversation has one (again after /reset)."""
        title = title_of(self.agent.messages) if self.agent is not None else ""
        if title and title != self._title:
            self._title = title
            now = datetime.now().astimezone().isoformat(timespec="seconds")
            await self.send(
                schema.SessionInfoUpdate(session_update="session_info_update", title=title, updated_at=now)
            )

    async def _send_notes(self) -> None:
        """What happened in the background (an MCP server that failed, a memory not saved)."""
        events = self.agent.drain_background_events() if self.agent is not None else []
        for note in (event for event in events if isinstance(event, Note)):
            if note.level in ("warning", "error"):
                log.warning("session %s: %s", self.id, note.text)
            for update in self._note(note):
                await self.send(update)


def reply_problem(err: BaseException | None) -> str:
    """One line for a client's failed or malformed reply."""
    text = one_line(err, "the reply")
    return f"malformed reply ({text})" if isinstance(err, ValidationError) else text or type(err).__name__


def one_line(err: BaseException | None, whole: str) -> str:
    """The first line of `err`; of pydantic's report, whose lines are several, `where: what` of its first
    complaint (`whole` when it is about the value itself)."""
    if isinstance(err, ValidationError) and err.errors():
        first = err.errors()[0]
        return f"{'.'.join(str(part) for part in first['loc']) or whole}: {first['msg']}"
    lines = str(err).strip().splitlines()
    return lines[0] if lines else ""
