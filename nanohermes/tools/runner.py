"""ToolRunner: which tools are offered, approvals, dispatch. A batch's calls are checked and approved
one by one in call order, then run together in a thread pool (calls on one path chained in order).
Nothing raises out of `run_calls`: every failure is a result."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import INTERRUPTED, Cancelled, NanoHermesError
from nanohermes.core.events import Event, Note, ToolFinished, ToolStarted
from nanohermes.core.protocols import ApprovalRequest, Approver, ChangeGuard, Decision
from nanohermes.core.types import Shown, ToolCall, ToolResult, shorten
from nanohermes.tools.base import CallContext, Tool, tool_from_function
from nanohermes.tools.files import FileTools
from nanohermes.tools.outcomes import cap_output, done, failure, finish_summary, make_result, start_remote
from nanohermes.tools.paths import OutsideWorkspace, Workspace
from nanohermes.tools.sandbox import Sandbox
from nanohermes.tools.search import SearchTools
from nanohermes.tools.shell import ShellTool, shown_seconds

if TYPE_CHECKING:
    from nanohermes.memory import MemoryStore
    from nanohermes.tools.hooks import HookRunner

MAX_WORKERS = 8
NO_APPROVER = (
    "ERROR: {tool} was refused: writes, edits, shell commands and MCP tools that are not read-only need "
    "approval and this run cannot ask for it. Re-run with --yes or --permission auto to allow them."
)
DECLINED = "refused: the user declined this {tool} call. Do not retry it; ask the user how to proceed."


@dataclass
class _Prepared:
    call: ToolCall
    tool: Tool
    args: dict[str, Any]
    resolved: Path | None
    granted: frozenset[Path]


class ToolRunner:
    """The agent's tool executor for one workspace."""

    def __init__(
        self,
        workspace: Path,
        *,
        permission: str,
        approver: Approver | None,
        store: MemoryStore | None,
        tool_output_chars: int = 20_000,
        shell_timeout: float = 120.0,
        sandbox: Sandbox | None = None,
        checkpoints: ChangeGuard | None = None,
        files: FileTools | None = None,  # ACP: reading and writing through the editor
    ) -> None:
        self.workspace = Workspace(workspace)
        self.max_chars = tool_output_chars
        self.checkpoints = checkpoints
        self._approver = approver
        self.hooks: HookRunner | None = None  # set by whoever builds the agent
        self._files = files or FileTools(self.workspace, max_chars=tool_output_chars)
        self._shell = ShellTool(
            self.workspace.root, timeout=shell_timeout, max_chars=tool_output_chars, sandbox=sandbox
        )
        self._sources: list[Callable[[], Iterable[Tool]]] = []
        self._always: set[str] = set()
        self._granted: set[Path] = set()
        self._asking = threading.Lock()  # sub-agents in parallel `task` calls share this runner
        self.permission = permission
        search = SearchTools(self.workspace)
        self._tools: dict[str, Tool] = {
            tool.name: tool
            for tool in (
                tool_from_function(self._files.read_file),
                tool_from_function(self._files.write_file, mutating=True, approval_kind="edit"),
                tool_from_function(self._files.edit_file, mutating=True, approval_kind="edit"),
                tool_from_function(search.list_files),
                tool_from_function(search.grep),
                tool_from_function(self._shell.run_shell, mutating=True, approval_kind="shell"),
            )
        }
        if store is not None:
            from nanohermes.tools.memory import memory_tools

            self._tools |= {tool.name: tool for tool in memory_tools(store)}

    def register(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def add_source(self, source: Callable[[], Iterable[Tool]]) -> None:
        """Tools that come and go (MCP servers restart): asked for at each use; `register`ed ones win."""
        self._sources.append(source)

    def _all_tools(self) -> dict[str, Tool]:
        if not self._sources:  # asked at every call: no copy when no MCP server is configured
            return self._tools
        return {tool.name: tool for source in self._sources for tool in source()} | self._tools

    def set_permission(self, mode: str) -> None:
        self.permission = mode  # read-only, ask or auto: the settings and commands refuse others

    def _offered(self, tool: Tool) -> bool:
        return not (self.permission == "read-only" and tool.mutating)

    def schemas(self) -> list[dict[str, Any]]:
        return [tool.schema() for tool in self._all_tools().values() if self._offered(tool)]

    def names(self) -> set[str]:
        return {tool.name for tool in self._all_tools().values() if self._offered(tool)}

    def run_calls(self, calls: list[ToolCall], cancel: CancelToken) -> Iterator[Event]:
        if not calls:
            return
        notes: list[Note] = []
        prepared = self._prepare_all(calls, cancel, notes)
        yield from notes
        runs: list[tuple[Future[ToolResult], bool, float]] = []  # (its result, whether it ran, since)
        chains: dict[Path, Future[ToolResult]] = {}
        # its threads are started by the first submit: a batch of remote calls starts none
        pool = ThreadPoolExecutor(min(MAX_WORKERS, len(calls)), thread_name_prefix="nanohermes-tool")
        try:
            for call, ready in zip(calls, prepared, strict=True):
                began = time.monotonic()
                if isinstance(ready, ToolResult) or cancel.cancelled:
                    result = ready if isinstance(ready, ToolResult) else _interrupted(call)
                    runs.append((done(result), False, began))
                    continue
                tool = ready.tool
                after = chains.get(ready.resolved) if ready.resolved else None
                # a remote call needs no worker unless it waits for an earlier call or a checkpoint
                if tool.start is not None and after is None and not (tool.mutating and self.checkpoints):
                    future = start_remote(call, tool, dict(ready.args), self.max_chars)
                else:
                    future = pool.submit(self._execute, ready, cancel, after)
                if ready.resolved is not None:
                    chains[ready.resolved] = future
                runs.append((future, True, began))
                yield ToolStarted(call, _summary(tool, ready.args))
            results = _collect(calls, [future for future, _, _ in runs], cancel)
            for (call, result), (_, ran, began) in zip(results, runs, strict=True):
                if ran and self.hooks is not None:
                    result = yield from self.hooks.after_tool(result, call, cancel, self.max_chars)
                yield ToolFinished(result, finish_summary(result), time.monotonic() - began)
        finally:
            pool.shutdown(wait=not cancel.cancelled, cancel_futures=True)

    def _prepare_all(
        self, calls: list[ToolCall], cancel: CancelToken, notes: list[Note]
    ) -> list[_Prepared | ToolResult]:
        """Check every call and ask its approvals, in call order, before anything is dispatched
        (so the user sees the whole plan, and a "no" stops a call before any of its batch runs)."""
        previews: dict[Path, str] = {}
        prepared: list[_Prepared | ToolResult] = []
        for index, call in enumerate(calls):
            try:
                cancel.raise_if_cancelled()
                prepared.append(self._prepare(call, previews, cancel, notes))
            except Cancelled:  # also Ctrl-C at an approval (the approver raised), before it reaches the token
                return prepared + [_interrupted(later) for later in calls[index:]]
        return prepared

    def _execute(
        self, prepared: _Prepared, cancel: CancelToken, after: Future[ToolResult] | None
    ) -> ToolResult:
        """Run one call in a worker thread, after `after` (a call on the same path)."""
        if after is not None:
            wait([after])
        call, tool = prepared.call, prepared.tool
        if tool.mutating and self.checkpoints is not None and not cancel.cancelled:
            self.checkpoints.before_change(prepared.resolved)  # never raises; the first one snapshots
        if cancel.cancelled:  # also when Ctrl-C came during the checkpoint: the call must not run
            return _interrupted(call)
        kwargs = dict(prepared.args)
        if tool.context_arg:
            kwargs[tool.context_arg] = CallContext(cancel, prepared.granted)
        try:
            value = tool.func(**kwargs)
        except Exception as err:  # a bug in a tool must not end the turn either: it is reported
            return make_result(call, cap_output(failure(tool, err), self.max_chars), ok=False)
        shown = value if isinstance(value, Shown) else Shown(str(value), ())
        return make_result(call, cap_output(shown.text, self.max_chars), True, shown.images)

    def _prepare(
        self, call: ToolCall, previews: dict[Path, str], cancel: CancelToken, notes: list[Note]
    ) -> _Prepared | ToolResult:
        """Check one call and ask its approval (in the calling thread, one at a time); raises Cancelled."""
        tool = self._all_tools().get(call.name)
        try:
            if tool is None:
                available = ", ".join(sorted(self.names()))
                name = shorten(call.name, 80)  # a model may send a name of any length: not echoed whole
                raise _Refused(f"ERROR: unknown tool {name!r}; available: {available}")
            if not self._offered(tool):
                raise _Refused(f"ERROR: {tool.name} is not available in read-only mode")
            args = tool.parse_arguments(call.arguments)
            if self.hooks is not None:  # before any question: a blocked call is never asked
                outcome = self.hooks.run("pre_tool", cancel, call)
                notes.extend(outcome.notes)
                cancel.raise_if_cancelled()
                if outcome.reason:
                    raise _Refused(f"ERROR: a pre_tool hook blocked this call: {outcome.reason}")
            resolved, granted = self._check_path(call, tool, args)
            risk = tool.risk(args) if tool.risk is not None else None
            if risk and self.permission == "read-only":
                raise _Refused(f"ERROR: {tool.name} was refused in read-only mode: {risk}")
            asks = ((tool.mutating and not tool.preapproved) or risk) and self.permission == "ask"
            if asks and tool.approval_kind not in self._always:
                self._approve(call, tool, args, resolved, previews, risk)
        except Cancelled:
            raise
        except _Refused as refused:
            error = str(refused)
        except NanoHermesError as err:
            error = f"ERROR: {err.one_line()}"
        else:
            return _Prepared(call, tool, args, resolved, granted)
        return make_result(call, cap_output(error, self.max_chars), ok=False)  # it may echo the arguments

    def _check_path(
        self, call: ToolCall, tool: Tool, args: dict[str, Any]
    ) -> tuple[Path | None, frozenset[Path]]:
        if not tool.path_arg:
            return None, frozenset(self._granted)
        default = tool.parameters["properties"][tool.path_arg].get("default", ".")
        path = str(args.get(tool.path_arg) or default)
        try:
            return self.workspace.resolve(path, frozenset(self._granted)), frozenset(self._granted)
        except OutsideWorkspace as err:
            if self.permission != "ask" or self._approver is None:
                raise
            title = f"{tool.name} wants a path outside the workspace: {err.resolved}"
            if self._ask(call, title, str(err.resolved), f"ERROR: {err.one_line()}"):
                self._granted.add(err.resolved)
            return err.resolved, frozenset(self._granted | {err.resolved})

    def _approve(
        self,
        call: ToolCall,
        tool: Tool,
        args: dict[str, Any],
        resolved: Path | None,
        previews: dict[Path, str],
        risk: str | None = None,
    ) -> None:
        if self._approver is None:
            raise _Refused(NO_APPROVER.format(tool=tool.name) + (f" ({risk})" if risk else ""))
        title, detail, after = self._describe(tool, args, resolved, previews)
        if risk:
            title = f"{tool.name}: {risk}"
        if self._ask(call, title, detail, DECLINED.format(tool=tool.name)):
            self._always.add(tool.approval_kind)
        if resolved is not None and after is not None:
            previews[resolved] = after

    def _ask(self, call: ToolCall, title: str, detail: str, refusal: str) -> bool:
        """True when the user answered "always"; a "no" raises _Refused with `refusal`."""
        assert self._approver is not None
        with self._asking:
            decision = self._approver(ApprovalRequest(call.name, title, detail, call))
        if decision not in (Decision.YES, Decision.ALWAYS):  # anything but a yes is a no
            raise _Refused(refusal)
        return decision is Decision.ALWAYS

    def _describe(
        self, tool: Tool, args: dict[str, Any], resolved: Path | None, previews: dict[Path, str]
    ) -> tuple[str, str, str | None]:
        if tool.func == self._files.write_file and resolved is not None:
            content = str(args["content"])
            verb = "Overwrite" if resolved in previews or resolved.exists() else "Create"
            diff = self._files.preview_write(resolved, content, previews.get(resolved))
            return f"{verb} {self.workspace.relative(resolved)}", diff, content
        if tool.func == self._files.edit_file and resolved is not None:
            diff, after = self._files.preview_edit(resolved, previews.get(resolved), **args)
            return f"Edit {self.workspace.relative(resolved)}", diff, after
        if tool.func == self._shell.run_shell:
            timeout = args.get("timeout")
            suffix = f" (timeout {shown_seconds(timeout)} s)" if isinstance(timeout, int | float) else ""
            return f"Run a shell command in {self.workspace.root}{suffix}", str(args["command"]), None
        return f"Run {tool.name}", json.dumps(args, ensure_ascii=False, indent=2), None


class _Refused(Exception):
    """A call refused before dispatch; its text is the whole result."""


def _summary(tool: Tool, args: dict[str, Any]) -> str:
    if not tool.summary_arg:
        return ""
    value = args.get(tool.summary_arg)
    if value is None:
        value = tool.parameters["properties"].get(tool.summary_arg, {}).get("default", "")
    return shorten(str(value), 200)


def _interrupted(call: ToolCall) -> ToolResult:
    return make_result(call, INTERRUPTED, ok=False)


def _collect(
    calls: list[ToolCall], futures: list[Future[ToolResult]], cancel: CancelToken
) -> Iterator[tuple[ToolCall, ToolResult]]:
    """Every call's result in call order, as soon as it is done; on cancellation at once, interrupted."""
    stopped: Future[Any] = Future()  # done when the batch is cancelled
    unregister = cancel.on_cancel(lambda: stopped.set_result(None))
    try:
        for call, future in zip(calls, futures, strict=True):
            wait([future, stopped], return_when=FIRST_COMPLETED)
            if future.done() and not future.cancelled():
                yield call, future.result()
            else:
                future.cancel()
                yield call, _interrupted(call)
    finally:
        unregister()
