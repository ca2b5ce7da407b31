"""Slash commands: a dict of small functions, each with a usage and a one-line description for /help."""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text

from nanohermes.agent.compaction import total_chars
from nanohermes.config.setting_values import optional_name
from nanohermes.config.settings import PERMISSION_MODES
from nanohermes.core.errors import NanoHermesError
from nanohermes.core.types import plural, shorten
from nanohermes.sessions.paths import recent_session_files, session_title
from nanohermes.ui.command_context import CommandContext, Handler
from nanohermes.ui.mcp_cmd import NONE_CONFIGURED, status_lines
from nanohermes.ui.safe_text import ECHO_CHARS, echoed, terminal_safe
from nanohermes.ui.undo_cmd import list_checkpoints, show_diff, undo

SESSIONS_SHOWN = 15


@dataclass(frozen=True)
class Command:
    usage: str
    description: str
    handler: Handler


def resume_hint(session_path: Path, sessions_dir: Path) -> str:
    """The command line that resumes a session: its name when it lives in sessions_dir, else its path."""
    named = session_path.parent == sessions_dir and session_path.suffix == ".json"
    return f"nanohermes --session {shlex.quote(session_path.stem if named else str(session_path))}"


def cmd_help(ctx: CommandContext, arg: str) -> None:
    from rich.table import Table  # loaded on first use: keeps the prompt fast

    table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(overflow="fold")
    for command in COMMANDS.values():
        table.add_row(Text(command.usage), Text(command.description))
    for custom in ctx.custom.values():
        table.add_row(Text(f"/{custom.name}"), Text(terminal_safe(custom.description)))
    ctx.console.print(table)
    ctx.say("The model's plan (update_plan) shows as a checklist: ☑ done · ◐ doing · ☐ to do", "dim")
    ctx.say("yours: .nanohermes/commands/NAME.md is /NAME; .nanohermes/skills/NAME/SKILL.md a skill", "dim")
    ctx.say(
        "Enter sends · Esc Enter (or Alt+Enter) adds a line · @path completes files · "
        "Ctrl-C stops a turn · Ctrl-D exits",
        "dim",
    )


def cmd_exit(ctx: CommandContext, arg: str) -> None:
    ctx.exit_requested = True


def _no_argument(ctx: CommandContext, command: str, does: str, arg: str) -> bool:
    """True when `arg` is empty: `/reset memory` must not clear the conversation."""
    if arg.strip():
        ctx.fail(f"{command} takes no arguments ({does}), not {echoed(arg)}")
    return not arg.strip()


def cmd_reset(ctx: CommandContext, arg: str) -> None:
    if not _no_argument(ctx, "/reset", "it clears this conversation, keeping memory", arg):
        return
    ctx.runtime.agent.reset()
    ctx.say("conversation cleared (long-term memory kept)", "dim")


def cmd_compact(ctx: CommandContext, arg: str) -> None:
    if not _no_argument(ctx, "/compact", "it summarises all but the recent messages", arg):
        return
    agent = ctx.runtime.agent
    ctx.run_events(lambda cancel: agent.compact(cancel))


def cmd_memory(ctx: CommandContext, arg: str) -> None:
    from nanohermes.ui.memory_slash import run_memory  # imports the memory package: not at start-up

    run_memory(ctx, arg)


def cmd_session(ctx: CommandContext, arg: str) -> None:
    agent = ctx.runtime.agent
    ctx.say(f"session {agent.session_path}")
    ctx.say(
        f"{plural(len(agent.messages), 'message')} · {total_chars(agent.messages):,} characters of context · "
        f"model {agent.model}",
        "dim",
    )
    ctx.say(f"resume with: {resume_hint(agent.session_path, ctx.runtime.settings.sessions_dir)}", "dim")


def cmd_sessions(ctx: CommandContext, arg: str) -> None:
    if arg.strip():  # /sessions search Q: the earlier exchanges of this workspace that best match Q
        verb, _, query = arg.strip().partition(" ")
        if verb != "search" or not query.strip():
            ctx.fail(f"usage: /sessions [search QUERY], not /sessions {echoed(arg)}")
            return
        from nanohermes.sessions.search import format_hits, search_sessions

        hits, notes = search_sessions(ctx.runtime.settings.sessions_dir, Path.cwd(), query)
        ctx.say(format_hits(hits, notes, query))
        return
    sessions_dir = ctx.runtime.settings.sessions_dir
    files = recent_session_files(sessions_dir)
    if not files:
        ctx.say(f"no saved sessions in {sessions_dir}", "dim")
        return
    current = ctx.runtime.agent.session_path
    now = time.time()
    for path, modified in files[:SESSIONS_SHOWN]:
        mark = "*" if path == current else " "
        title = session_title(path)
        ctx.say(
            f"{mark} {path.stem:<20} {_age(now - modified):>7} ago  {title[:36]:<36}  "
            f"{resume_hint(path, sessions_dir)}"
        )
    if len(files) > SESSIONS_SHOWN:
        ctx.say(f"… and {len(files) - SESSIONS_SHOWN} older ones in {sessions_dir}", "dim")


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return f"{int(seconds)} s"


def cmd_model(ctx: CommandContext, arg: str) -> None:
    name = arg.strip()
    agent = ctx.runtime.agent
    if not name:
        ctx.say(f"model: {agent.model}")
        return
    try:
        optional_name(name)  # as --model checks it: shown in the toolbar and notes
    except ValueError as err:
        ctx.fail(f"model name {echoed(name)} {err}")
        return
    agent.set_model(name)
    shown = name if len(name) <= ECHO_CHARS else echoed(name)
    ctx.say(f"model set to {shown} (from the next request)", "dim")


def cmd_permission(ctx: CommandContext, arg: str) -> None:
    mode = arg.strip()
    if not mode:
        ctx.say(f"permission: {ctx.permission} (choices: {', '.join(PERMISSION_MODES)})")
        sandbox = ctx.runtime.sandbox
        if sandbox is not None:
            ctx.say(f"shell {sandbox.status} (setting: sandbox = {sandbox.mode})", "dim")
        return
    if mode not in PERMISSION_MODES:
        ctx.fail(f"unknown permission mode {echoed(mode)}; use one of: {', '.join(PERMISSION_MODES)}")
        return
    ctx.runtime.agent.set_permission(mode)
    ctx.permission = mode
    ctx.say(f"permission set to {mode}", "dim")


def cmd_tokens(ctx: CommandContext, arg: str) -> None:
    usage = ctx.runtime.agent.usage
    ctx.say(
        f"tokens so far: {usage.prompt_tokens:,} prompt + {usage.completion_tokens:,} completion "
        f"= {usage.total_tokens:,}"
        + (" (estimated, about 4 characters a token: the server reports no usage)" if usage.estimated else "")
    )
    threshold = ctx.runtime.settings.compact_threshold_chars
    chars = total_chars(ctx.runtime.agent.messages)
    ctx.say(f"context: {chars:,} characters ({100 * chars // threshold}% of the compaction threshold)", "dim")


def cmd_mcp(ctx: CommandContext, arg: str) -> None:
    """/mcp: the servers of this session (they start in the background: some may still be starting)."""
    manager = ctx.runtime.mcp
    if manager is None:
        ctx.say(NONE_CONFIGURED, "dim")
        return
    for text, style in status_lines(manager.status()):
        ctx.say(text, style)


COMMANDS: dict[str, Command] = {
    "/help": Command("/help", "list the commands and keys", cmd_help),
    "/exit": Command("/exit", "save the session and quit (also Ctrl-D)", cmd_exit),
    "/reset": Command("/reset", "clear the conversation; long-term memory stays", cmd_reset),
    "/compact": Command("/compact", "summarise older messages now to free context", cmd_compact),
    "/memory": Command(
        "/memory [list|search Q|add K T|forget ID|stats|last]",
        "long-term memory; last: what the turn recalled",
        cmd_memory,
    ),
    "/session": Command("/session", "this session's file, size and how to resume it", cmd_session),
    "/sessions": Command(
        "/sessions [search Q]", "recent sessions and how to resume them; search: past exchanges", cmd_sessions
    ),
    "/model": Command("/model [NAME]", "show or switch the model", cmd_model),
    "/permission": Command("/permission [MODE]", "show or set read-only | ask | auto", cmd_permission),
    "/tokens": Command("/tokens", "tokens used so far and context fill", cmd_tokens),
    "/diff": Command("/diff [all]", "files the last turn changed (all: since the session began)", show_diff),
    "/undo": Command("/undo", "revert the last turn's file changes (again: one more turn)", undo),
    "/checkpoints": Command(
        "/checkpoints", "the turns that changed files, and their files", list_checkpoints
    ),
    "/mcp": Command("/mcp", "MCP servers: state, tools and last error", cmd_mcp),
}


def is_command(text: str) -> bool:
    """A line is a command when its first word looks like `/name` (a path like /usr/x is a message)."""
    first = text.strip().split(maxsplit=1)[0] if text.strip() else ""
    return first.startswith("/") and first[1:].replace("-", "").isalpha()


def dispatch(ctx: CommandContext, text: str) -> None:
    # any whitespace ends the name, as in is_command: a pasted `/memory<TAB>list` is /memory
    name, arg = (text.split(maxsplit=1) + ["", ""])[:2]
    command = COMMANDS.get(name.lower())
    if command is None:
        close = [n for n in COMMANDS if n.startswith(name.lower()[:3])]
        hint = f" — did you mean {close[0]}?" if close else ""
        ctx.fail(f"unknown command {shorten(name, ECHO_CHARS)}{hint} (/help lists them)")
        return
    try:
        command.handler(ctx, arg)
    except NanoHermesError as err:
        ctx.fail(err.one_line())
