"""The interactive loop. Start-up stays fast: the prompt is drawn before the core (agent, model client,
memory, tools) is even imported; it is built in the background while the user types (SPEC §1)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nanohermes import __version__
from nanohermes.core.errors import EXIT_USAGE, NanoHermesError
from nanohermes.core.types import Message, message_text, plural, shorten
from nanohermes.ui.safe_text import terminal_safe
from nanohermes.ui.setup_hint import missing_key_message, missing_model_message

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.formatted_text import FormattedText
    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output
    from rich.console import Console

    from nanohermes.config.options import CliOptions
    from nanohermes.config.settings import Settings
    from nanohermes.core.events import Event
    from nanohermes.ui.approve import TerminalApprover
    from nanohermes.ui.seams import ResumePreview, RuntimeBuilder, RuntimeLike, RuntimeLoader

EXCHANGES_SHOWN = 3  # of a resumed session, under the banner


def run_repl(
    options: CliOptions,
    settings: Settings,
    build_runtime: RuntimeBuilder,
    preview: ResumePreview | None = None,
) -> int:
    """Chat in the terminal until /exit, Ctrl-D or Ctrl-C twice. Returns the exit code."""
    if not settings.model:
        print(missing_model_message(settings), file=sys.stderr)
        return EXIT_USAGE
    from nanohermes.ui.approve import TerminalApprover
    from nanohermes.ui.safe_console import safe_console
    from nanohermes.ui.seams import RuntimeLoader

    notes = [no_key] if (no_key := missing_key_message(settings)) else []
    if options.yes:  # SPEC §5: --yes means auto (run_chat applied it); say so
        notes.append(
            "--yes: permission auto for this session: writes, edits and shell commands run without asking"
        )
    console = safe_console(highlight=False)
    approver = TerminalApprover(console)
    loader = RuntimeLoader(lambda: build_runtime(options, settings, approver), preview)
    return Repl(loader, settings, console, approver, notes=notes).loop()


class Repl:
    def __init__(
        self,
        loader: RuntimeLoader,
        settings: Settings,
        console: Console,
        approver: TerminalApprover,
        *,
        terminal: tuple[Input, Output] | None = None,
        notes: Sequence[str] = (),
    ) -> None:
        from nanohermes.agent.custom_commands import load_commands
        from nanohermes.config.settings import PERMISSION_MODES
        from nanohermes.ui.command_context import CommandContext
        from nanohermes.ui.commands import COMMANDS
        from nanohermes.ui.prompt import ExitWindow, ReplCompleter, key_bindings, make_session
        from nanohermes.ui.render import Renderer
        from nanohermes.ui.turn import TurnDriver

        self.loader = loader
        self.settings = settings
        custom, problems = load_commands(Path.cwd(), settings.state_dir)
        self.notes = [*notes, *problems]
        self.console = console
        self.renderer = Renderer(console)
        self.driver = TurnDriver(self.renderer, approver)
        self.ctx = CommandContext(
            self._runtime,
            console,
            self.driver.run,
            permission=settings.permission,
            approver=approver,
            custom=custom,
        )
        self._fill = 0
        arguments = {
            "/permission": PERMISSION_MODES,
            "/memory": ("list", "search", "forget", "stats"),
            "/diff": ("all",),
            "/sessions": ("search",),
        }
        completer = ReplCompleter([*COMMANDS, *(f"/{name}" for name in custom)], arguments, root=Path.cwd())
        self._exit_window = ExitWindow()
        source, sink = terminal or (None, None)
        self.session: PromptSession[str] = make_session(
            settings.history_file,
            completer,
            self._toolbar,
            key_bindings(self._exit_window),
            input=source,
            output=sink,
            secrets=[key] if (key := settings.api_key_value()) else [],
        )
        loader.built.add_done_callback(lambda built: self._built(built.exception()))

    def loop(self) -> int:
        from nanohermes.ui.prompt import PROMPT, ExitRequested

        self._banner()
        while not self.ctx.exit_requested:
            self._show_background_events()
            try:
                text = self.session.prompt([("class:prompt bold", PROMPT)], pre_run=self._pre_run)
            except (EOFError, ExitRequested):
                break
            except KeyboardInterrupt:
                continue
            try:
                self._handle(text)
            except KeyboardInterrupt:
                self.renderer.note("interrupted", "warning")
        return self._shutdown()

    def _handle(self, text: str) -> None:
        from nanohermes.agent.compaction import total_chars
        from nanohermes.agent.custom_commands import expand_command
        from nanohermes.ui.commands import dispatch, is_command

        if not text.strip():
            return
        message = expand_command(self.ctx.custom, text)
        if message is None and is_command(text):
            dispatch(self.ctx, text)
        else:
            agent = self._runtime().agent
            self.driver.run(lambda cancel: agent.run(message or text, cancel))
            if self.driver.exit_signal is not None:  # killed or hung up mid-turn: save and end
                self.ctx.exit_requested = True
        if self.loader.ready:  # the context fill after a turn or a command (/reset, /compact)
            runtime = self.loader.get()
            threshold = runtime.settings.compact_threshold_chars  # at least 1,000
            self._fill = min(999, total_chars(runtime.agent.messages) * 100 // threshold)

    def _runtime(self) -> RuntimeLike:
        if self.loader.ready:
            return self.loader.get()
        with self.console.status("starting…", spinner="dots"):
            return self.loader.get()

    def _pre_run(self) -> None:
        """Before the prompt's first frame: report a failed build, or start building after the frame."""
        self._exit_window.close()
        app = self.session.app
        error = self.loader.error
        if error is not None:
            app.exit(exception=error)
        elif not self.loader.ready and app.loop is not None:
            app.loop.call_soon(self.loader.start)

    def _built(self, error: BaseException | None) -> None:
        """Builder thread: redraw the toolbar and show early notes, or end the prompt to show the error."""
        app = self.session.app
        loop = app.loop
        if not app.is_running or loop is None:
            return
        try:  # everything on the prompt's loop: the prompt may end between the check above and now
            if error is None:
                loop.call_soon_threadsafe(self._show_early_events)
            else:
                loop.call_soon_threadsafe(lambda: app.exit(exception=error) if app.is_running else None)
        except RuntimeError:  # its loop closed meanwhile: the next prompt shows the session and notes
            return

    def _banner(self) -> None:
        from rich.text import Text

        line = f"nanohermes {__version__} · {self.settings.model} · /help for commands · Ctrl-D to exit"
        self.console.print(Text(line, style="dim"))
        preview = self.loader.preview
        for note in [*self.notes, *(preview.notices if preview is not None else ())]:
            self.renderer.note(note, "warning")
        messages = preview.messages if preview is not None else ()
        count = sum(1 for m in messages if m.get("role") in ("user", "assistant"))
        if preview is not None and count:
            resumed = f"resumed {preview.name}: {plural(count, 'message')}; last exchanges:"
            self.console.print(Text(resumed, style="dim"))
            width = max(20, self.console.width - 2)
            for text in exchange_lines(messages, width):
                self.console.print(Text(text, style="dim"), no_wrap=True, overflow="ellipsis")

    def _shutdown(self) -> int:
        from nanohermes.ui.commands import resume_hint

        runtime = self._runtime()
        agent = runtime.agent
        try:
            agent.save()
        except NanoHermesError as err:
            self.renderer.note(f"could not save the session: {err.one_line()}", "error")
        try:
            if not agent.wait_for_distillation(0.2):  # the spinner only when there is something to wait for
                with self.console.status("finishing memory distillation… (Ctrl-C skips)", spinner="dots"):
                    agent.wait_for_distillation(runtime.settings.request_timeout + 5)
        except KeyboardInterrupt:
            self.renderer.note("stopped waiting for memory distillation", "warning")
        runtime.close()
        self._show_background_events()
        path = agent.session_path
        if not path.is_file():  # a session is written by its first turn
            self.console.print("Nothing to save: no message was sent in this session.")
            return 0
        from rich.text import Text

        hint = resume_hint(path, runtime.settings.sessions_dir)  # a path may hold `[`: not markup
        self.console.print(Text.assemble("Session saved. Resume it with: ", (hint, "bold")))
        self.console.print("(or [bold]nanohermes --continue[/bold]: the latest session in this directory)")
        return 0

    def _show_background_events(self) -> None:
        if self.loader.ready:
            self._render(self.loader.get().agent.drain_background_events())

    def _show_early_events(self) -> None:
        """Event loop: notes posted while the runtime was built go above the prompt at once."""
        from prompt_toolkit.application import run_in_terminal

        if not self.session.app.is_running:
            return  # they are shown before the next prompt
        self.session.app.invalidate()  # the toolbar names the session now
        events = self.loader.get().agent.drain_background_events()
        if events:
            run_in_terminal(lambda: self._render(events))

    def _render(self, events: Sequence[Event]) -> None:
        for event in events:
            self.renderer.handle(event)

    def _toolbar(self) -> FormattedText:
        from nanohermes.ui.prompt import sandbox_label, toolbar_text

        runtime = self.loader.get() if self.loader.ready else None
        preview = self.loader.preview
        model, session, shell = str(self.settings.model), preview.name if preview else "new session", ""
        if runtime is not None:
            model, session = runtime.agent.model, runtime.agent.session_path.stem
            if (box := runtime.sandbox) is not None:
                shell = sandbox_label(box.active, box.network, box.mode)
        hint = "Ctrl-C again to exit" if self._exit_window.is_open() else ""
        return toolbar_text(model, self.ctx.permission, session, self._fill, hint, shell)


def exchange_lines(messages: Sequence[Message], width: int) -> list[str]:
    """`you: …` / `→ …` lines of the last exchanges, each cut to `width` and terminal-safe (a session
    file holds model replies). A reply that only called tools names them."""
    exchanges: list[tuple[str, str]] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            exchanges.append((message_text(message), ""))
        elif role == "assistant" and exchanges:
            answer = message_text(message).strip() or _tools_called(message)
            if answer:
                exchanges[-1] = (exchanges[-1][0], answer)
    lines: list[str] = []
    for question, answer in exchanges[-EXCHANGES_SHOWN:]:
        lines.append(shorten(terminal_safe(f"you: {question}"), width))
        if answer:
            lines.append(shorten(terminal_safe(f"  → {answer}"), width))
    return lines


def _tools_called(message: Message) -> str:
    """(the session store checked the shape of each call: `core.types.message_problem`)"""
    names = [call["function"]["name"] for call in message.get("tool_calls") or ()]
    return f"(called {', '.join(filter(None, names))})" if any(names) else ""
