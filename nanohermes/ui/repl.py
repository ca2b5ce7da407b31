"""The interactive loop: read a line, run a slash command or a turn, render, repeat; save on the way out.

Start-up stays fast: nothing here touches the network, and the heavy pieces (Markdown, pygments) load
on the first answer, not before the prompt.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from nanohermes import __version__
from nanohermes.errors import NanoHermesError
from nanohermes.ui.setup_hint import EXIT_NO_MODEL, missing_model_message

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.formatted_text import FormattedText
    from rich.console import Console

    from nanohermes.cliargs import CliOptions
    from nanohermes.settings import Settings
    from nanohermes.ui.approve import TerminalApprover
    from nanohermes.ui.commands import CommandContext, EventSource
    from nanohermes.ui.seams import RuntimeBuilder, RuntimeLike

HINT_SECONDS = 2.0


def run_repl(options: CliOptions, settings: Settings, build_runtime: RuntimeBuilder) -> int:
    """Chat in the terminal until /exit, Ctrl-D or Ctrl-C twice. Returns the exit code."""
    if settings.model is None and not options.local:
        print(missing_model_message(settings), file=sys.stderr)
        return EXIT_NO_MODEL
    from rich.console import Console

    from nanohermes.ui.approve import TerminalApprover

    console = Console(highlight=False)
    approver = TerminalApprover(console)
    runtime = build_runtime(options, settings, approver)
    return Repl(runtime, console, approver).loop()


class Repl:
    def __init__(self, runtime: RuntimeLike, console: Console, approver: TerminalApprover | None) -> None:
        from nanohermes.ui.commands import COMMANDS, PERMISSION_MODES, CommandContext
        from nanohermes.ui.prompt import ReplCompleter, key_bindings, make_session
        from nanohermes.ui.render import Renderer
        from nanohermes.ui.turn import TurnDriver

        self.runtime = runtime
        self.console = console
        self.renderer = Renderer(console)
        self.driver = TurnDriver(self.renderer, approver)
        self.ctx: CommandContext = CommandContext(
            runtime, console, self._run_events, permission=runtime.settings.permission
        )
        self._fill = 0
        self._hint_until = 0.0
        arguments = {"/permission": PERMISSION_MODES, "/memory": ("list", "search", "forget", "stats")}
        completer = ReplCompleter(COMMANDS, arguments, root=_cwd())
        self.session: PromptSession[str] = make_session(
            runtime.settings.history_file, completer, self._toolbar, key_bindings(self._first_interrupt)
        )

    # -- the loop -------------------------------------------------------------------------------

    def loop(self) -> int:
        from nanohermes.ui.prompt import PROMPT, ExitRequested

        self._banner()
        while not self.ctx.exit_requested:
            self._show_background_events()
            try:
                text = self.session.prompt([("class:prompt bold", PROMPT)])
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
        from nanohermes.ui.commands import dispatch, is_command

        if not text.strip():
            return
        if is_command(text):
            dispatch(self.ctx, text)
        else:
            agent = self.runtime.agent
            self._run_events(lambda cancel: agent.run(text, cancel))
        self._update_fill()

    def _run_events(self, source: EventSource) -> None:
        self.driver.run(source)
        self._update_fill()

    # -- around the loop ------------------------------------------------------------------------

    def _banner(self) -> None:
        from rich.text import Text

        agent = self.runtime.agent
        line = f"nanohermes {__version__} · {agent.model} · /help for commands · Ctrl-D to exit"
        self.console.print(Text(line, style="dim"))
        earlier = sum(1 for m in agent.messages if m.get("role") in ("user", "assistant"))
        if earlier:
            self.console.print(Text(f"resumed {self._session_name()}: {earlier} messages", style="dim"))
        self._update_fill()

    def _shutdown(self) -> int:
        from nanohermes.ui.commands import resume_hint, session_file

        agent = self.runtime.agent
        try:
            agent.save()
        except NanoHermesError as err:
            self.renderer.error(f"could not save the session: {err.one_line()}")
        try:
            with self.console.status("finishing memory distillation…", spinner="dots"):
                agent.wait_for_distillation(self.runtime.settings.request_timeout + 5)
        except KeyboardInterrupt:
            self.renderer.note("stopped waiting for memory distillation", "warning")
        self._show_background_events()
        path = session_file(self.runtime)
        if path is None:
            self.console.print("This conversation was not saved to a session file.")
            return 0
        hint = resume_hint(path, self.runtime.settings.sessions_dir)
        self.console.print(f"Session saved. Resume it with: [bold]{hint}[/bold]", highlight=False)
        return 0

    def _session_name(self) -> str:
        from nanohermes.ui.commands import session_file

        path = session_file(self.runtime)
        return path.stem if path else "unsaved"

    def _show_background_events(self) -> None:
        for event in self.runtime.agent.drain_background_events():
            self.renderer.handle(event)

    def _update_fill(self) -> None:
        from nanohermes.ui.commands import context_chars

        threshold = max(1, self.runtime.settings.compact_threshold_chars)
        self._fill = min(999, context_chars(self.runtime) * 100 // threshold)

    def _first_interrupt(self) -> None:
        self._hint_until = time.monotonic() + HINT_SECONDS

    def _toolbar(self) -> FormattedText:
        from nanohermes.ui.prompt import toolbar_text

        agent = self.runtime.agent
        hint = "Ctrl-C again to exit" if time.monotonic() < self._hint_until else ""
        return toolbar_text(agent.model, self.ctx.permission, self._session_name(), self._fill, hint)


def _cwd() -> Path:
    return Path.cwd()
