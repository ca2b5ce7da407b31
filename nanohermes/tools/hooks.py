"""Hooks (`[hooks]`, Claude Code's contract): the user's commands at five agent events, each run like
a `run_shell` command with one JSON event on stdin. Exit 2 blocks a pre_tool call or a user_prompt (or
after post_tool tells the model), stderr the reason; any other failure is a note and the action goes on."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nanohermes.config.hooks_config import Hook, Hooks
from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import Cancelled, NanoHermesError, reason
from nanohermes.core.events import Event, Note
from nanohermes.core.types import ToolCall, ToolResult, shorten
from nanohermes.tools.outcomes import cap_output, make_result
from nanohermes.tools.sandbox import Sandbox
from nanohermes.tools.shell import CappedBuffer, run_command

OUTPUT_CAP = 64 * 1024  # bytes of a hook's stderr kept (its head and tail)
BLOCK = 2  # the exit code by which a hook blocks what it was asked about
DECIDING = ("pre_tool", "post_tool", "user_prompt")  # elsewhere exit 2 is a failure like any other


@dataclass(frozen=True)
class HookOutcome:
    reason: str = ""  # the stderr of a hook that exited 2 at a deciding event
    notes: tuple[Note, ...] = ()


class HookRunner:
    """The hooks of one agent: its settings, sandbox, workspace and session file."""

    def __init__(self, hooks: Hooks, sandbox: Sandbox, workspace: Path, session: Path, verbose: bool) -> None:
        self.hooks, self.sandbox, self.verbose = hooks, sandbox, verbose
        self.workspace, self.session = workspace, session

    def run(
        self, event: str, cancel: CancelToken, call: ToolCall | None = None, **fields: Any
    ) -> HookOutcome:
        """Run `event`'s hooks (those matching `call`'s tool) in turn until one blocks."""
        hooks: tuple[Hook, ...] = getattr(self.hooks, event)
        if call is not None:
            hooks = tuple(hook for hook in hooks if hook.matcher is None or hook.matcher.fullmatch(call.name))
        if not hooks:  # every tool call asks: no payload (a whole tool result) is built for nothing
            return HookOutcome()
        payload = {
            "hook_event_name": event,
            "session_id": self.session.stem,
            "transcript_path": str(self.session),
            "cwd": str(self.workspace),
        }
        if call is not None:  # the runner parsed these arguments before any hook runs
            payload |= {"tool_name": call.name, "tool_input": json.loads(call.arguments.strip() or "{}")}
        data = json.dumps(payload | fields).encode()  # ASCII: lone surrogates cannot break it
        notes: list[Note] = []
        for hook in hooks:
            started = time.monotonic()
            try:
                code, stderr = self._execute(hook, data, cancel)
            except Cancelled:
                break
            except (NanoHermesError, OSError) as err:  # refused by the sandbox, no shell, a NUL, no temp file
                text = f"hook {event} {shorten(hook.command, 60)!r} not run: {reason(err)}"
                notes.append(Note(text, "warning"))
                continue
            blocked = code == BLOCK and event in DECIDING
            failed = code != 0 and not blocked
            if failed or self.verbose:
                text = _described(event, hook, code, stderr, time.monotonic() - started)
                notes.append(Note(text, "warning" if failed else "debug"))
            if blocked:
                return HookOutcome(stderr.strip() or f"the {event} hook exited {BLOCK}", tuple(notes))
        return HookOutcome("", tuple(notes))

    def after_tool(
        self, result: ToolResult, call: ToolCall, cancel: CancelToken, max_chars: int
    ) -> Generator[Event, None, ToolResult]:
        """Run the post_tool hooks on a call that ran; a hook's exit 2 reason is added for the model."""
        outcome = self.run("post_tool", cancel, call, tool_response=result.content)
        yield from outcome.notes
        if not outcome.reason:
            return result
        text = f"{result.content}\n\npost_tool hook: {outcome.reason}"
        return make_result(call, cap_output(text, max_chars), result.ok, result.images)

    def _execute(self, hook: Hook, data: bytes, cancel: CancelToken) -> tuple[int | None, str]:
        """(exit code, None when it timed out; its stderr). Raises Cancelled on Ctrl-C."""
        out, err = CappedBuffer(0), CappedBuffer(OUTPUT_CAP)  # stdout is ignored
        with tempfile.TemporaryFile() as stdin:  # not a pipe: a hook that never reads it cannot block us
            stdin.write(data)
            stdin.seek(0)
            code, timed_out, _ = run_command(
                hook.command, self.sandbox, self.workspace, hook.timeout, cancel, out, err, stdin=stdin
            )
        return None if timed_out else code, err.text()


def _described(event: str, hook: Hook, code: int | None, stderr: str, seconds: float) -> str:
    """One line about one run (None: it timed out)."""
    command = shorten(hook.command, 60)
    if code is None:
        return f"hook {event} {command!r} timed out after {hook.timeout:g} s and was stopped"
    said = f": {shorten(stderr, 200)}" if code and stderr.strip() else ""
    return f"hook {event} {command!r}: exit {code} in {seconds:.2f} s{said}"
