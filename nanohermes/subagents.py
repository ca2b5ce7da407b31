"""Sub-agents (SPEC §4.6): definitions, and the `task` tool that runs one in its own message loop.

A definition is a Markdown file with a small front matter (`~/.nanohermes/agents/NAME.md`, examples
in `config/agents/`):

    ---
    name: reviewer
    description: Reviews changes for bugs and style problems; reports findings, changes nothing.
    tools: read_file, list_files, grep, memory_search
    ---
    You are a meticulous code reviewer. …   (the body is the sub-agent's role prompt)

`tools` is optional (default: every tool the parent has, except `task` itself). The sub-agent shares
the parent's tool executor (same permissions, approvals, workspace) and memory store; its system
prompt gets the memory block retrieved for its task text; it never distills.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nanohermes.cancel import CancelToken
from nanohermes.errors import INTERRUPTED, LLMError, ToolError
from nanohermes.events import ToolFinished
from nanohermes.llm import extract_text_tool_calls
from nanohermes.memory import set_block
from nanohermes.prompts import base_system_prompt
from nanohermes.protocols import ChatModel, ToolExecutor
from nanohermes.tools.base import Tool
from nanohermes.turns import drop_cut_calls
from nanohermes.types import Message, ToolCall, ToolResult

if TYPE_CHECKING:
    from nanohermes.memory import MemoryStore

TASK_TOOL = "task"
READ_TOOLS = ("read_file", "list_files", "grep", "memory_search")


@dataclass(frozen=True)
class AgentDefinition:
    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] | None = None
    """Allowed tool names; None = all of the parent's tools except `task`."""
    source: str = "built-in"


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
        READ_TOOLS,
    ),
)


def parse_definition(text: str, source: str, fallback_name: str) -> AgentDefinition:
    """Parse one definition file. Raises ValueError with a one-line reason."""
    meta: dict[str, str] = {}
    body = text.strip()
    if body.startswith("---"):
        header, sep, rest = body[3:].partition("\n---")
        if not sep:
            raise ValueError("front matter opened with --- but never closed")
        for line in header.strip().splitlines():
            key, colon, value = line.partition(":")
            if line.strip() and not colon:
                raise ValueError(f"front matter line without 'key: value': {line.strip()!r}")
            if colon:
                meta[key.strip().lower()] = value.strip()
        body = rest.strip()
    name = meta.get("name") or fallback_name
    if not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"agent name {name!r} may hold only letters, digits, '-' and '_'")
    if not body:
        raise ValueError("the prompt (the text after the front matter) is empty")
    tools = tuple(t.strip() for t in meta["tools"].split(",") if t.strip()) if meta.get("tools") else None
    description = meta.get("description") or body.splitlines()[0][:100]
    return AgentDefinition(name, description, body, tools, source)


def load_definitions(directories: Iterable[Path]) -> tuple[dict[str, AgentDefinition], list[str]]:
    """Built-ins, then each directory's `*.md` in order (later ones win). Returns (definitions, problems)."""
    found = {d.name: d for d in BUILTIN_AGENTS}
    problems: list[str] = []
    for directory in directories:
        try:
            files = sorted(directory.glob("*.md")) if directory.is_dir() else []
        except OSError:
            files = []
        for path in files:
            try:
                definition = parse_definition(path.read_text(encoding="utf-8"), str(path), path.stem)
            except (OSError, UnicodeDecodeError, ValueError) as err:
                problems.append(f"sub-agent definition {path} skipped: {err}")
                continue
            found[definition.name] = definition
    return found, problems


class SubAgentRunner:
    """Runs one sub-agent task to its final answer (no streaming, no distillation)."""

    def __init__(
        self,
        model: ChatModel,
        tools: ToolExecutor,
        *,
        workspace: Path,
        model_name: Callable[[], str],
        store: MemoryStore | None = None,
        max_iterations: int = 50,
        language: str = "en",
    ) -> None:
        self._model, self._tools, self._store = model, tools, store
        self._workspace, self._model_name = workspace, model_name
        self._max_iterations, self._language = max_iterations, language

    def system_prompt(self, definition: AgentDefinition, task: str) -> str:
        base = base_system_prompt(self._workspace, memory=self._store is not None, extra=definition.prompt)
        if self._store is None:
            return base
        return set_block(base, self._store.retrieve_block(task, lang=self._language))

    def allowed(self, definition: AgentDefinition) -> set[str]:
        names = self._tools.names() - {TASK_TOOL}
        return names if definition.tools is None else names & set(definition.tools)

    def run(self, definition: AgentDefinition, task: str, cancel: CancelToken) -> str:
        allowed = self.allowed(definition)
        schemas = [s for s in self._tools.schemas() if s.get("function", {}).get("name") in allowed]
        messages: list[Message] = [
            {"role": "system", "content": self.system_prompt(definition, task)},
            {"role": "user", "content": task},
        ]
        for _ in range(self._max_iterations):
            cancel.raise_if_cancelled()
            try:
                result = self._model.complete(
                    messages, schemas or None, model=self._model_name(), cancel=cancel
                )
            except LLMError as err:
                raise ToolError(f"sub-agent '{definition.name}' failed: {err.one_line()}") from None
            calls = result.tool_calls
            if not calls and result.content:
                result.content, calls = extract_text_tool_calls(result.content, allowed)
                result.tool_calls = calls
            cut = drop_cut_calls(result)  # as the main loop: a call cut mid-arguments never runs
            calls = result.tool_calls
            if cut and not calls:
                raise ToolError(f"sub-agent '{definition.name}': {cut}")
            messages.append(result.to_message())
            if not calls:
                return result.content.strip() or f"(sub-agent '{definition.name}' gave no answer)"
            messages.extend(r.to_message() for r in self._run_calls(definition, calls, allowed, cancel))
        raise ToolError(
            f"sub-agent '{definition.name}' stopped after {self._max_iterations} model calls "
            "without a final answer"
        )

    def _run_calls(
        self, definition: AgentDefinition, calls: list[ToolCall], allowed: set[str], cancel: CancelToken
    ) -> list[ToolResult]:
        permitted = [c for c in calls if c.name in allowed]
        finished = [e.result for e in self._tools.run_calls(permitted, cancel) if isinstance(e, ToolFinished)]
        by_position = iter(finished)
        results: list[ToolResult] = []
        for call in calls:
            if call.name not in allowed:
                text = f"ERROR: tool '{call.name}' is not available to sub-agent '{definition.name}'"
                results.append(ToolResult(call.id, call.name, text, ok=False))
                continue
            got = next(by_position, None)
            results.append(got or ToolResult(call.id, call.name, INTERRUPTED, ok=False))
        return results


def make_task_tool(definitions: dict[str, AgentDefinition], runner: SubAgentRunner) -> Tool:
    """The `task` tool offered to the main agent (register it into the ToolRunner)."""
    listing = "; ".join(f"{d.name}: {d.description}" for d in definitions.values())

    def task(agent: str, task: str, cancel: CancelToken) -> str:
        definition = definitions.get(agent.strip())
        if definition is None:
            raise ToolError(f"unknown sub-agent '{agent}'; available: {', '.join(definitions)}")
        if not task.strip():
            raise ToolError("task is empty; describe what the sub-agent should do")
        return runner.run(definition, task, cancel)

    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "agent": {"type": "string", "enum": list(definitions), "description": "which sub-agent to run"},
            "task": {
                "type": "string",
                "description": "the complete, self-contained task: the sub-agent sees nothing else",
            },
        },
        "required": ["agent", "task"],
    }
    description = (
        "Run a sub-agent on a self-contained task in its own context; only its final answer comes "
        f"back (keeps your context small). Sub-agents: {listing}"
    )
    return Tool(
        name=TASK_TOOL,
        description=description,
        parameters=parameters,
        func=task,
        summary_arg="agent",
        approval_kind=TASK_TOOL,
        cancel_arg="cancel",
    )
