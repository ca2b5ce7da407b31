"""`nanohermes -p PROMPT` (SPEC §1): one non-interactive turn. Plain text only (no terminal libraries:
start-up time): the answer (or `--json`, stream-json lines) on stdout, progress and errors on stderr."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from nanohermes.core.cancel import CancelToken, cancel_in_background, signals_handled
from nanohermes.core.errors import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    INTERRUPTED,
    ConfigError,
    NanoHermesError,
)
from nanohermes.core.events import (
    Compacted,
    Event,
    MemoryRecalled,
    Note,
    PlanUpdated,
    Retrying,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from nanohermes.core.toolcalls import call_arguments
from nanohermes.core.types import valid_text
from nanohermes.ui.safe_text import fail, is_terminal, say, speaks_utf8, terminal_safe
from nanohermes.ui.setup_hint import missing_key_message, missing_model_message

if TYPE_CHECKING:
    from nanohermes.agent.loop import Agent
    from nanohermes.config.options import CliOptions
    from nanohermes.config.settings import Settings
    from nanohermes.ui.seams import RuntimeBuilder, RuntimeLike

DISTILL_GRACE = 5.0
DISTILL_NOTE_AFTER = 1.0  # seconds of waiting before saying so on stderr
PROMPT_MAX_BYTES = 16 * 1024 * 1024  # `-p - < /dev/zero` must not fill memory
STREAM_OUTPUT_CHARS = 2000  # of a tool's result, in a stream-json `tool_end` line


@dataclass
class _Outcome:
    """What the turn produced, gathered from its events."""

    session: Path
    end: TurnFinished = field(default_factory=lambda: TurnFinished(False, "error"))
    errors: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    memories: list[dict[str, Any]] = field(default_factory=list)
    plan: list[dict[str, str]] = field(default_factory=list)

    def add(self, event: Event) -> dict[str, Any] | None:
        """Record `event`; return its stream-json line (None: it has none; the result comes last)."""
        if isinstance(event, TextDelta) and event.text:
            return {"type": "text", "text": event.text}
        if isinstance(event, ToolStarted):
            call = event.call
            self.tool_calls.append({"id": call.id, "name": call.name, "arguments": call_arguments(call)})
            return {"type": "tool_start", **self.tool_calls[-1], "summary": event.summary}
        if isinstance(event, ToolFinished):
            result = event.result
            line = {"id": result.call_id, "name": result.name, "ok": result.ok, "summary": event.summary}
            started = (e for e in self.tool_calls if e["id"] == result.call_id and "ok" not in e)
            if entry := next(started, None):
                entry.update(ok=result.ok, summary=event.summary)
            else:  # refused or invalid before dispatch: no ToolStarted
                self.tool_calls.append({**line, "ok": False})
            cut = "…" if len(result.content) > STREAM_OUTPUT_CHARS else ""
            return {"type": "tool_end", **line, "output": result.content[:STREAM_OUTPUT_CHARS] + cut}
        if isinstance(event, MemoryRecalled):  # SPEC §3.10: which memories the turn was given
            self.memories = [
                {"id": m.id, "kind": m.kind, "text": m.text, "score": round(m.score, 4), "scope": m.scope}
                for m in event.memories
            ]
            return {"type": "memory", "memories": self.memories}
        if isinstance(event, PlanUpdated):
            self.plan = [{"step": step.step, "status": step.status} for step in event.steps]
            return {"type": "plan", "plan": self.plan}
        if isinstance(event, Note) and event.level == "error":
            self.errors.append(event.text)
        elif isinstance(event, TurnFinished):
            self.end = event
            return {"type": "result", **self.result(), "exit": self.code}
        return None

    def result(self) -> dict[str, Any]:
        """What `--json` prints; stream-json's last line adds its type and the exit code."""
        return {
            "answer": self.end.answer,
            "session": str(self.session),
            "usage": self.end.usage.to_dict(),
            "tool_calls": self.tool_calls,
            "files_changed": list(self.end.changed_files),
            "memories": self.memories,
            "plan": self.plan,
            "completed": self.end.completed,
            "error": self.error or None,
        }

    @property
    def code(self) -> int:
        if self.end.completed:
            return EXIT_OK
        return EXIT_INTERRUPTED if self.end.reason == "interrupted" else EXIT_FAILURE

    @property
    def error(self) -> str:
        reason = self.end.reason
        if self.end.completed:
            return ""
        if reason == "interrupted":
            return INTERRUPTED
        if reason == "max_iterations":
            return "the turn stopped at max_iterations before the model finished (raise max_iterations)"
        return self.errors[0] if self.errors else f"the turn did not complete ({reason})"


def run_oneshot(options: CliOptions, settings: Settings, build_runtime: RuntimeBuilder) -> int:
    if not settings.model:  # (--local set the model, and a loopback base_url that needs no key)
        print(missing_model_message(settings), file=sys.stderr)
        return EXIT_USAGE
    if no_key := missing_key_message(settings):
        return fail(no_key, EXIT_USAGE)
    if options.prompt == "-" and is_terminal(sys.stdin):  # else it seems to hang, saying nothing
        say("reading the prompt from the terminal; end it with Ctrl-D")
    try:
        prompt = read_prompt(options.prompt or "", sys.stdin)
    except ConfigError as err:
        return fail(err.one_line(), EXIT_USAGE)
    if not prompt.strip():
        return fail("the prompt is empty (give -p TEXT, or -p - with text on stdin)", EXIT_USAGE)
    if prompt.lstrip().startswith("/"):
        prompt = _custom_command(prompt, settings)
    runtime = build_runtime(options, settings, None)
    try:
        return _run_turn(options, settings, runtime, prompt)
    finally:
        runtime.close()


def _run_turn(options: CliOptions, settings: Settings, runtime: RuntimeLike, prompt: str) -> int:
    agent = runtime.agent
    outcome = _Outcome(agent.session_path)
    cancel = CancelToken()
    for event in agent.drain_background_events():  # notices from start-up (memory file, agents)
        _progress(event, options.verbose)
    as_json = options.json_output or options.stream_json
    answer = _AnswerPrinter(sys.stdout, stream=not as_json and is_terminal(sys.stdout))
    with signals_handled(_cancel_on_signal(cancel)):
        for event in agent.run(prompt, cancel):
            line = outcome.add(event)
            if not as_json:
                answer.handle(event)
            elif line is not None and (options.stream_json or isinstance(event, TurnFinished)):
                line = line if options.stream_json else outcome.result()  # --json: the result alone
                answer.emit(json.dumps(line, ensure_ascii=not speaks_utf8(sys.stdout)) + "\n")
            _progress(event, options.verbose)
    _wait_for_distillation(agent, settings.request_timeout + DISTILL_GRACE)
    unsaved = ""
    try:
        agent.save()
    except NanoHermesError as err:
        unsaved = f"could not save the session: {err.one_line()}"
    for event in agent.drain_background_events():
        _progress(event, options.verbose)
    if outcome.code != EXIT_OK:
        fail(outcome.error, outcome.code)
        if unsaved:  # the turn's error is the one that matters
            say(unsaved)
        return outcome.code
    if answer.closed:  # the turn is saved, but the answer reached no one
        where = f"; the answer is in {agent.session_path}" if not unsaved else ""
        what = "standard output was closed before the answer was written"
        if answer.problem:
            what = f"cannot write the answer to standard output: {answer.problem}"
        return fail(what + where, EXIT_FAILURE)
    if unsaved:  # the answer is printed, but the turn is lost: not a success
        return fail(unsaved, EXIT_FAILURE)
    return EXIT_OK


def read_prompt(value: str, stdin: TextIO | None) -> str:
    """`-p -` reads the prompt from stdin. Bytes that are not UTF-8 become U+FFFD: as lone surrogates
    they could not be sent as JSON, nor saved."""
    if value != "-":
        return valid_text(value)
    if stdin is None:
        raise ConfigError("-p - reads the prompt from stdin, but stdin is closed")
    data = stdin.buffer.read(PROMPT_MAX_BYTES + 1)
    if len(data) > PROMPT_MAX_BYTES:
        raise ConfigError(f"the prompt on stdin is larger than {PROMPT_MAX_BYTES // 2**20} MB")
    return data.decode("utf-8", "replace")


def _custom_command(prompt: str, settings: Settings) -> str:
    """`-p "/NAME args"`: the custom command's message; any other prompt as it is."""
    from nanohermes.agent.custom_commands import expand_command, load_commands

    commands, problems = load_commands(Path.cwd(), settings.state_dir)
    for problem in problems:
        say(problem)
    return expand_command(commands, prompt) or prompt


class _AnswerPrinter:
    """Puts the answer on stdout the moment it is known: streamed to a terminal, else whole when the
    turn completes; flushed before distillation starts waiting."""

    def __init__(self, out: TextIO, *, stream: bool) -> None:
        self.out, self.stream = out, stream
        self.segment: list[str] = []  # streamed since the last tool call (joined once, at the end)
        self.open_line = False
        # closed by its reader (`| head -c1`) or unwritable (a full disk): the turn goes on, is saved
        self.closed = False
        self.problem = ""  # why it could not be written, when its reader did not close it

    def emit(self, text: str) -> None:
        """Write and flush `text` unless stdout is closed; a lone surrogate (`"\\ud800"`) becomes U+FFFD."""
        if self.closed:
            return
        try:
            self.out.write(valid_text(text))
            self.out.flush()
        except OSError as err:
            self.closed = True
            if not isinstance(err, BrokenPipeError):
                self.problem = err.strerror or str(err)
            drop_stdout(self.out)

    def handle(self, event: Event) -> None:
        if isinstance(event, TextDelta) and self.stream and event.text:
            self._write(event.text)
            self.segment.append(event.text)
        elif isinstance(event, ToolStarted) and self.stream:
            self._end_line()
            self.segment = []
        elif isinstance(event, TurnFinished):
            # a refusal or a cut answer is still shown; the exit code says the turn failed
            shown = event.completed or bool(event.answer and event.reason in ("refusal", "length"))
            if shown and not self.stream:
                self._write(event.answer + "\n")
            elif shown and event.answer.strip() != "".join(self.segment).strip():
                self._end_line()  # the answer differs from what streamed (e.g. a text tool call)
                self._write(event.answer)
            self._end_line()

    def _write(self, text: str) -> None:
        # only a terminal acts on escape sequences; piped, the answer is passed on byte for byte
        self.emit(terminal_safe(text) if self.stream else text)
        self.open_line = not text.endswith("\n")

    def _end_line(self) -> None:
        if self.open_line:
            self._write("\n")


def drop_stdout(out: TextIO) -> None:
    """Point the closed stdout at /dev/null, or the interpreter's exit prints «Exception ignored …»."""
    with contextlib.suppress(OSError, ValueError):  # no file descriptor (a test's StringIO): nothing to do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
        os.close(devnull)


def _wait_for_distillation(agent: Agent, budget: float) -> None:
    """Wait for the turn's distillation; say so after a moment. Ctrl-C skips it (the answer is out)."""
    try:
        if agent.wait_for_distillation(DISTILL_NOTE_AFTER):
            return
        say("saving what to remember from this turn… (Ctrl-C skips)")
        agent.wait_for_distillation(budget - DISTILL_NOTE_AFTER)
    except KeyboardInterrupt:
        agent.stop_distillation()
        say("memory distillation skipped")


def _progress(event: Event, verbose: bool) -> None:
    line = ""
    if isinstance(event, ToolStarted):
        line = f"· {event.call.name} {event.summary}".rstrip()
    elif isinstance(event, ToolFinished) and (verbose or not event.result.ok):
        line = f"  {event.result.name}: {event.summary}"
    elif isinstance(event, Note) and event.level != "error" and (verbose or event.level != "debug"):
        # an interruption is said once, by the closing error line
        line = f"nanohermes: {event.text}" if event.text != INTERRUPTED else ""
    elif isinstance(event, Compacted):
        line = f"nanohermes: context compacted, {event.saved}"
    elif isinstance(event, MemoryRecalled) and verbose:
        line = f"nanohermes: memory: {len(event.memories)} recalled"
    elif isinstance(event, Retrying) and verbose:
        line = f"nanohermes: retrying in {event.delay:.1f}s ({event.reason})"
    if line:
        print(terminal_safe(line), file=sys.stderr, flush=True)


def _cancel_on_signal(cancel: CancelToken) -> Callable[[int, FrameType | None], None]:
    """First Ctrl-C cancels the turn; a second one raises KeyboardInterrupt. SIGTERM and SIGHUP cancel
    it too: its shell commands run in sessions of their own, which a kill does not reach."""

    def handler(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT and cancel.cancelled:
            raise KeyboardInterrupt
        if signum == signal.SIGINT:
            say("interrupting… (Ctrl-C again to abort)")
        cancel_in_background(cancel)

    return handler
