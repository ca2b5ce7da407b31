"""Sub-agents (SPEC §4.6, README "Sub-agents"): definitions, and the `task` tool that runs one through
the agent's steps with the parent's tools and memory; a sub-agent never distills."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nanohermes.agent.plan import PLAN_TOOL
from nanohermes.agent.prompts import base_system_prompt
from nanohermes.agent.turns import Steps, Turn, TurnOver
from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import Cancelled, ToolError
from nanohermes.core.events import Event, Note, ToolFinished
from nanohermes.core.frontmatter import front_matter, markdown_files, read_definition, skipped, unquote
from nanohermes.core.types import Message, ToolCall, ToolResult, Usage, shorten
from nanohermes.llm import ChatClient
from nanohermes.memory import set_block
from nanohermes.tools import CallContext, Tool, ToolRunner, tool_from_function
from nanohermes.tools.outcomes import finish_summary

if TYPE_CHECKING:
    from nanohermes.config.settings import Settings
    from nanohermes.memory import MemoryStore

TASK_TOOL = "task"
FRONT_MATTER_KEYS = ("name", "description", "tools", "model", "color")
"""`model` and `color` (Claude Code's agent files) are accepted so that such a file loads, and not used."""
NAME_MAX_CHARS = 64
DEFINITION_MAX_BYTES = 100_000


@dataclass(frozen=True)
class AgentDefinition:
    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] | None = None  # None: all of the parent's tools but `task`


BUILTIN_AGENTS = (
    AgentDefinition(
        "general",
        "General-purpose helper for a self-contained multi-step task (research, a focused change).",
        "You are a sub-agent of nanohermes, a coding agent. You get one self-contained task from the "
        "main agent. Do it with the tools you have, then answer with a complete, concise report: "
        "what you found or changed (file paths, line numbers, commands) — the main agent sees only "
        "your final answer.",
    ),
    AgentDefinition(
        "explore",
        "Read-only explorer: finds where things are and how they work; changes nothing.",
        "You are a read-only exploration sub-agent of nanohermes. Search and read the code to answer "
        "the question you are given. Report precise findings with file paths and line numbers, and "
        "say what you could not find. Never try to modify anything.",
        ("read_file", "list_files", "grep", "memory_search"),
    ),
)


def parse_definition(text: str, fallback_name: str) -> AgentDefinition:
    """`text` as `read_definition` reads it. Raises ValueError with a one-line reason."""
    meta, body = front_matter(text.strip(), FRONT_MATTER_KEYS)
    name = unquote(meta.get("name", "")) or fallback_name
    if len(name) > NAME_MAX_CHARS:
        raise ValueError(f"agent name is {len(name):,} characters long; at most {NAME_MAX_CHARS}")
    if not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"agent name {name!r} may hold only letters, digits, '-' and '_'")
    if not body:
        raise ValueError("the prompt (the text after the front matter) is empty")
    tools = _tool_names(meta["tools"]) if "tools" in meta else None
    description = unquote(meta.get("description", "")) or body.splitlines()[0][:100]
    return AgentDefinition(name, description, body, tools)


def _tool_names(value: str) -> tuple[str, ...]:
    """`a, b`, `[a, b]` or `["a", "b"]`; `[]` is no tools. An empty value is an error, not "all"."""
    names = tuple(unquote(name.strip()) for name in value.strip("[]").split(",") if name.strip())
    if not names and not (value.startswith("[") and value.endswith("]")):
        raise ValueError("'tools' is empty: list tool names, or omit the line for all the parent's tools")
    return names


def load_definitions(directories: Iterable[Path]) -> tuple[dict[str, AgentDefinition], list[str]]:
    """Built-ins, then each directory's `*.md` (a later directory wins; a name taken twice within one
    is a problem), and the problems."""
    found = {d.name: d for d in BUILTIN_AGENTS}
    problems: list[str] = []
    for directory in directories:
        taken: dict[str, Path] = {}
        for path in markdown_files("*.md", directory):
            try:
                text = read_definition(path, DEFINITION_MAX_BYTES)  # as commands and skills are read
                definition = parse_definition(text, path.stem)
                if definition.name in taken:
                    raise ValueError(f"name '{definition.name}' is already taken by {taken[definition.name]}")
            except (OSError, ValueError) as err:
                problems.append(skipped("sub-agent definition", path, err))
            else:
                taken[definition.name] = path
                found[definition.name] = definition
    return found, problems


@dataclass(frozen=True)
class SubAgentRunner:
    """Runs a sub-agent task to its final answer (its stream has no reader): the task pinned through
    compaction, the allowed tools only, errors as ToolError."""

    model: ChatClient
    tools: ToolRunner
    _: KW_ONLY
    workspace: Path
    model_name: Callable[[], str]
    config: Settings
    store: MemoryStore | None = None
    add_usage: Callable[[Usage], None] | None = None

    def allowed(self, definition: AgentDefinition) -> set[str]:
        names = self.tools.names() - {TASK_TOOL, PLAN_TOOL}  # the plan is the main agent's
        return names if definition.tools is None else names & set(definition.tools)

    def run(self, definition: AgentDefinition, task: str, cancel: CancelToken) -> str:
        system = base_system_prompt(self.workspace, memory=self.store is not None, extra=definition.prompt)
        if self.store is not None:
            system = set_block(system, self.store.retrieve_block(task, lang=self.config.language))
        task_message: Message = {"role": "user", "content": task}
        steps = Steps(
            self.model,
            _AllowedTools(self.tools, self.allowed(definition), definition.name),
            self.config.model_copy(update={"model": self.model_name()}),
            [{"role": "system", "content": system}, task_message],
            add_usage=self.add_usage or (lambda usage: None),
            pinned=2,
        )
        loop = steps.run_steps(Turn(task_message), cancel)
        notes: list[str] = []
        while True:
            try:
                event = next(loop)
            except StopIteration as stop:
                return _final_answer(definition, stop.value, notes)
            if isinstance(event, Note):
                notes.append(event.text)


@dataclass
class _AllowedTools:
    """The parent's tools a sub-agent may call; a call to another one gets an error result."""

    tools: ToolRunner
    allowed: set[str]
    agent: str

    def names(self) -> set[str]:
        return self.allowed

    def schemas(self) -> list[dict[str, Any]]:
        return [s for s in self.tools.schemas() if s.get("function", {}).get("name") in self.allowed]

    def run_calls(self, calls: list[ToolCall], cancel: CancelToken) -> Iterator[Event]:
        events = self.tools.run_calls([c for c in calls if c.name in self.allowed], cancel)
        for call in calls:
            if call.name not in self.allowed:
                text = f"ERROR: tool '{shorten(call.name, 80)}' is not available to sub-agent '{self.agent}'"
                refused = ToolResult(call.id, call.name, text, ok=False)
                yield ToolFinished(refused, finish_summary(refused))
                continue
            for event in events:  # up to this call's result: results come in call order
                yield event
                if isinstance(event, ToolFinished):
                    break
        yield from events


def _final_answer(definition: AgentDefinition, over: TurnOver, notes: list[str]) -> str:
    """An answer cut short or refused is kept, and says so: the main agent must not take a half
    report for a whole one."""
    if over.reason == "interrupted":
        raise Cancelled
    answer = over.answer.strip()
    if over.completed:
        return answer or f"(sub-agent '{definition.name}' gave no answer)"
    why = "; ".join([*notes, over.note.text if over.note else over.reason])
    if not answer:
        failed = " failed" if over.reason == "error" else ""
        raise ToolError(f"sub-agent '{definition.name}'{failed}: {why}")
    return f"{answer}\n\n[sub-agent '{definition.name}': {why}]"


def make_task_tool(definitions: dict[str, AgentDefinition], runner: SubAgentRunner) -> Tool:

    def task(agent: str, task: str, ctx: CallContext) -> str:
        """Run a sub-agent.

        Args:
            agent: which sub-agent to run
            task: the complete, self-contained task: the sub-agent sees nothing else
        """
        definition = definitions.get(agent.strip())
        if definition is None:
            raise ToolError(f"unknown sub-agent '{agent}'; available: {', '.join(definitions)}")
        if not task.strip():
            raise ToolError("task is empty; describe what the sub-agent should do")
        return runner.run(definition, task, ctx.cancel)

    tool = tool_from_function(task, summary_arg="agent")
    tool.parameters["properties"]["agent"]["enum"] = list(definitions)
    listing = "; ".join(f"{d.name}: {d.description}" for d in definitions.values())
    description = (
        "Run a sub-agent on a self-contained task in its own context; only its final answer comes "
        f"back (keeps your context small). Sub-agents: {listing}"
    )
    return dataclasses.replace(tool, description=description)
