"""One agent composed from shared parts, for the REPL, `-p` and every `nanohermes acp` session."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nanohermes.core.events import Note

if TYPE_CHECKING:
    from nanohermes.agent.loop import Agent
    from nanohermes.checkpoints import Checkpoints
    from nanohermes.config.mcp_config import McpServerConfig
    from nanohermes.config.options import CliOptions
    from nanohermes.config.settings import Settings
    from nanohermes.core.protocols import Approver
    from nanohermes.llm import ChatClient
    from nanohermes.mcp.manager import McpManager
    from nanohermes.memory import MemoryStore
    from nanohermes.sessions.lock import SessionLock
    from nanohermes.sessions.store import SessionData, SessionFile
    from nanohermes.tools.files import FileTools
    from nanohermes.tools.runner import ToolRunner
    from nanohermes.tools.sandbox import Sandbox

SAVE_WAIT = 10.0
"""How long closing waits for a session write still under way before it lets the session go."""
EXAMPLE_AGENTS_DIR = Path(__file__).resolve().parents[2] / "config" / "agents"  # SPEC §4.6


@dataclass(frozen=True)
class AgentParts:
    """What every agent of one process shares. `files` replaces the file tools' disk access (ACP: the
    editor's buffers)."""

    client: ChatClient
    store: MemoryStore | None
    approver: Approver | None
    options: CliOptions
    files: Callable[[Path, int], FileTools] | None = None


@dataclass(frozen=True)
class OpenedSession:
    """A session locked and read before the runtime is built (the REPL resuming shows it first)."""

    session: SessionFile
    data: SessionData | None
    lock: SessionLock
    notices: tuple[str, ...] = ()


def open_locked(path: Path, notices: tuple[str, ...] = ()) -> OpenedSession:
    """The session file under its lock, taken before the file is read."""
    from nanohermes.sessions.lock import SessionLock
    from nanohermes.sessions.store import SessionFile

    session = SessionFile(path)
    lock = SessionLock.acquire(path)
    try:
        return OpenedSession(session, session.load() if session.exists() else None, lock, notices)
    except BaseException:
        lock.release()
        raise


@dataclass
class Runtime:
    settings: Settings
    agent: Agent
    store: MemoryStore | None
    checkpoints: Checkpoints | None
    sandbox: Sandbox
    mcp: McpManager | None
    session_lock: SessionLock  # held for the life of the runtime (SPEC §4.4)

    def close(self) -> None:
        """The session is released last, after a session write still under way (at most SAVE_WAIT)."""
        try:
            if self.store is not None:
                self.store.flush()
            if self.mcp is not None:
                self.mcp.close()
            if self.checkpoints is not None:
                self.checkpoints.settle()
        finally:
            self.agent.flush(SAVE_WAIT)
            self.session_lock.release()


def build_agent(
    settings: Settings,
    parts: AgentParts,
    opened: OpenedSession,
    *,
    workspace: Path,
    mcp_servers: Mapping[str, McpServerConfig] | None = None,
) -> Runtime:
    """One agent on `workspace` and the `opened` session; whoever built it closes the runtime.
    The settings' MCP servers and `mcp_servers` (an ACP client's, winning a name clash) start in the
    background, their tools joining when ready."""
    from nanohermes.agent.plan import make_plan_tool
    from nanohermes.core.cancel import CancelToken
    from nanohermes.mcp import start_servers
    from nanohermes.tools.hooks import HookRunner

    checkpoints = _checkpoints(settings, workspace, opened.session.path)
    sandbox = _sandbox(settings, workspace, parts.options.secret_files)
    runner = _runner(settings, parts, workspace, sandbox, checkpoints)
    hooks = HookRunner(settings.hooks, sandbox, workspace, opened.session.path, parts.options.verbose)
    runner.hooks = hooks
    agent = _agent(settings, parts, runner, workspace, opened, checkpoints)
    if sandbox.startup_warning:
        # bwrap demanded: a warning; auto falling back to plain commands: a line (also in -p)
        agent.post_note(Note(sandbox.startup_warning, "warning" if sandbox.mode == "bwrap" else "info"))
    source = "resume" if opened.data is not None else "startup"
    for note in hooks.run("session_start", CancelToken(), source=source).notes:
        agent.post_note(note)
    _add_task_tool(agent, parts, runner, settings, workspace)
    runner.register(make_plan_tool())
    mcp = start_servers(
        {**settings.mcp_servers, **(mcp_servers or {})},
        cwd=workspace,
        log_dir=settings.state_dir / "mcp",
        on_notice=lambda text: agent.post_note(Note(text, "warning")),
    )
    if mcp is not None:
        runner.add_source(mcp.tools)
    return Runtime(settings, agent, parts.store, checkpoints, sandbox, mcp, opened.lock)


def _runner(
    settings: Settings, parts: AgentParts, workspace: Path, sandbox: Sandbox, checkpoints: Checkpoints | None
) -> ToolRunner:
    from nanohermes.tools.extra import extra_tools
    from nanohermes.tools.runner import ToolRunner

    runner = ToolRunner(
        workspace,
        permission=settings.permission,
        approver=parts.approver,
        store=parts.store,
        tool_output_chars=settings.tool_output_chars,
        shell_timeout=settings.shell_timeout,
        sandbox=sandbox,
        checkpoints=checkpoints,
        files=parts.files(workspace, settings.tool_output_chars) if parts.files else None,
    )
    for tool in extra_tools(settings, workspace):
        runner.register(tool)
    return runner


def _agent(
    settings: Settings,
    parts: AgentParts,
    runner: ToolRunner,
    workspace: Path,
    opened: OpenedSession,
    checkpoints: Checkpoints | None,
) -> Agent:
    """The agent, its system prompt holding AGENTS.md and the skills (whose problems are notes)."""
    from nanohermes.agent.loop import Agent
    from nanohermes.agent.prompts import base_system_prompt, load_agents_md
    from nanohermes.agent.skills import load_skills, make_skill_tool, skills_prompt
    from nanohermes.tools.images import attached_images

    agents_md, agents_note = load_agents_md(workspace)
    skills, skill_problems = load_skills(workspace, settings.state_dir)
    prompt = base_system_prompt(
        workspace, memory=parts.store is not None, agents_md=agents_md, skills=skills_prompt(skills)
    )
    agent = Agent(
        parts.client,
        runner,
        settings,
        prompt,
        session=opened.session,
        store=parts.store,
        resumed=opened.data,
        workspace=str(workspace),
        checkpoints=checkpoints,
        attach_images=functools.partial(attached_images, workspace=workspace, vision=settings.model_vision),
        verbose=parts.options.verbose,
        save_each_turn=parts.options.prompt is None,  # `-p` saves once, after distillation
    )
    for problem in [agents_note, *skill_problems]:
        if problem:
            agent.post_note(Note(problem, "warning"))
    if skills:
        runner.register(make_skill_tool(skills))
    return agent


def _checkpoints(settings: Settings, workspace: Path, session: Path) -> Checkpoints | None:
    if not settings.checkpoints:
        return None
    from nanohermes.checkpoints import Checkpoints

    private = (settings.state_dir, settings.memory_dir, settings.sessions_dir)
    checkpoints = Checkpoints(workspace, settings.state_dir, session, private=private)
    checkpoints.start_warm_up()  # overlaps the first request; the first change waits for it
    return checkpoints


def _sandbox(settings: Settings, workspace: Path, secret_files: tuple[Path, ...]) -> Sandbox:
    """Hidden from commands: everything nanohermes keeps (memory, sessions, config with keys,
    checkpoints), the files also when their folder holds the workspace."""
    from nanohermes.tools.sandbox import Sandbox

    hidden = [settings.state_dir, settings.memory_dir, settings.sessions_dir, Path("~/.nanohermes")]
    hidden += [settings.memory_file, Path("~/.nanohermes/config.toml"), *secret_files]
    return Sandbox.detect(
        settings.sandbox, network=settings.sandbox_network, workspace=workspace, hidden=hidden
    )


def _add_task_tool(
    agent: Agent, parts: AgentParts, runner: ToolRunner, settings: Settings, workspace: Path
) -> None:
    from nanohermes.agent.subagents import SubAgentRunner, load_definitions, make_task_tool

    definitions, problems = load_definitions([EXAMPLE_AGENTS_DIR, settings.state_dir / "agents"])
    for problem in problems:
        agent.post_note(Note(problem, "warning"))
    sub = SubAgentRunner(
        parts.client,
        runner,
        workspace=workspace,
        model_name=lambda: agent.model,
        config=settings,
        store=parts.store,
        add_usage=agent.add_turn_usage,
    )
    runner.register(make_task_tool(definitions, sub))
