"""Sub-agents (SPEC §4.6; the file format is in the README's "Sub-agents"): definitions, and the
`task` tool that runs one in its own message loop. A sub-agent shares the parent's tool executor and
memory store, its system prompt gets the memory block retrieved for its task text, it never distills."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nanohermes.agent.compaction import compact, summarizer, total_chars
from nanohermes.agent.config import AgentConfig
from nanohermes.agent.plan import PLAN_TOOL
from nanohermes.agent.prompts import base_system_prompt
from nanohermes.agent.turns import drop_cut_calls, reply_over
from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import INTERRUPTED, ContextOverflow, LLMError, ToolError
from nanohermes.core.events import ToolFinished
from nanohermes.core.fileio import read_small_text
from nanohermes.core.frontmatter import front_matter, markdown_files, skipped, unquote
from nanohermes.core.types import ChatResult, Message, ToolCall, ToolResult, Usage, shorten, shown_images
from nanohermes.llm import ChatClient, extract_text_tool_calls
from nanohermes.memory import set_block
from nanohermes.tools import Tool, ToolRunner, tool_from_function

if TYPE_CHECKING:
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
    tools: tuple[str, ...] | None = None
    """Allowed tool names; None = all of the parent's tools except `task`."""


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
    """Parse one definition file. Raises ValueError with a one-line reason."""
    text = text.lstrip("\ufeff").strip()  # a BOM (Windows editors) is no text
    meta, body = front_matter(text, FRONT_MATTER_KEYS)
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
    """Built-ins, then each directory's `*.md` in order (a later directory wins; within one, a name
    taken twice is a problem). Returns (definitions, problems). A FIFO or device is never read."""
    found = {d.name: d for d in BUILTIN_AGENTS}
    problems: list[str] = []
    for directory in directories:
        taken: dict[str, Path] = {}
        for path in markdown_files("*.md", directory):
            try:
                text = read_small_text(path, DEFINITION_MAX_BYTES)
                definition = parse_definition(text, path.stem)
                if definition.name in taken:
                    raise ValueError(f"name '{definition.name}' is already taken by {taken[definition.name]}")
            except (OSError, ValueError) as err:
                problems.append(skipped("sub-agent definition", path, err))
            else:
                taken[definition.name] = path
                found[definition.name] = definition
    return found, problems


class SubAgentRunner:
    """Runs one sub-agent task to its final answer (no streaming, no distillation). `add_usage`
    counts the tokens of its calls in the session's totals (/tokens)."""

    def __init__(
        self,
        model: ChatClient,
        tools: ToolRunner,
        *,
        workspace: Path,
        model_name: Callable[[], str],
        config: AgentConfig,
        store: MemoryStore | None = None,
        add_usage: Callable[[Usage], None] | None = None,
    ) -> None:
        self._model, self._tools, self._store, self._config = model, tools, store, config
        self._workspace, self._model_name = workspace, model_name
        self._add_usage = add_usage or (lambda usage: None)

    def allowed(self, definition: AgentDefinition) -> set[str]:
        names = self._tools.names() - {TASK_TOOL, PLAN_TOOL}  # the plan is the main agent's
        return names if definition.tools is None else names & set(definition.tools)

    def run(self, definition: AgentDefinition, task: str, cancel: CancelToken) -> str:
        allowed = self.allowed(definition)
        schemas = [s for s in self._tools.schemas() if s.get("function", {}).get("name") in allowed]
        system = base_system_prompt(self._workspace, memory=self._store is not None, extra=definition.prompt)
        if self._store is not None:
            system = set_block(system, self._store.retrieve_block(task, lang=self._config.language))
        messages: list[Message] = [{"role": "system", "content": system}, {"role": "user", "content": task}]
        threshold = self._config.compact_threshold_chars
        for _ in range(self._config.max_iterations):
            cancel.raise_if_cancelled()
            if total_chars(messages) > threshold:
                self._compacted(messages, cancel, threshold=threshold)
            result = self._complete(definition, messages, schemas or None, cancel)
            if not result.tool_calls and result.content:
                result.content, result.tool_calls = extract_text_tool_calls(result.content, allowed)
            cut = drop_cut_calls(result)  # as the main loop: a call cut mid-arguments never runs
            if cut and not result.tool_calls:
                raise ToolError(f"sub-agent '{definition.name}': {cut}")
            messages.append(result.to_message())
            if not result.tool_calls:
                return _final_answer(definition, result)
            results = self._run_calls(definition, result.tool_calls, allowed, cancel)
            messages.extend([*(r.to_message() for r in results), *shown_images(results)])
        raise ToolError(
            f"sub-agent '{definition.name}' stopped after {self._config.max_iterations} model calls "
            "without a final answer"
        )

    def _complete(
        self, definition: AgentDefinition, messages: list[Message], tools: Any, cancel: CancelToken
    ) -> ChatResult:
        """One model call; a context overflow compacts the context and tries once more."""
        try:
            try:
                result = self._model.complete(messages, tools, model=self._model_name(), cancel=cancel)
            except ContextOverflow:
                if not self._compacted(messages, cancel, threshold=None):
                    raise
                result = self._model.complete(messages, tools, model=self._model_name(), cancel=cancel)
            self._add_usage(result.counted_usage(messages, tools))
            return result
        except LLMError as err:
            raise ToolError(f"sub-agent '{definition.name}' failed: {err.one_line()}") from None

    def _compacted(self, messages: list[Message], cancel: CancelToken, *, threshold: int | None) -> bool:
        """Compact the context as the main loop compacts its own; the task message stays verbatim.
        False: nothing to compact."""
        summarize = summarizer(self._model, self._model_name(), cancel, self._add_usage)
        system, task, rest = messages[0], messages[1], messages[2:]
        keep = self._config.compact_keep_messages
        outcome = compact([system, *rest], keep=keep, summarize=summarize, threshold=threshold)
        if outcome is None:
            return False
        messages[:] = [outcome.messages[0], task, *outcome.messages[1:]]
        return True

    def _run_calls(
        self, definition: AgentDefinition, calls: list[ToolCall], allowed: set[str], cancel: CancelToken
    ) -> list[ToolResult]:
        permitted = [c for c in calls if c.name in allowed]
        events = self._tools.run_calls(permitted, cancel)
        finished = iter([e.result for e in events if isinstance(e, ToolFinished)])
        results: list[ToolResult] = []
        for call in calls:
            if call.name not in allowed:
                name = shorten(call.name, 80)
                text = f"ERROR: tool '{name}' is not available to sub-agent '{definition.name}'"
                results.append(ToolResult(call.id, call.name, text, ok=False))
            else:
                results.append(next(finished, None) or ToolResult(call.id, call.name, INTERRUPTED, ok=False))
        return results


def _final_answer(definition: AgentDefinition, result: ChatResult) -> str:
    """The sub-agent's answer. One cut by the token cap, stopped by the provider or refused is
    kept, and says so: the main agent must not take a half report for a whole one."""
    over = reply_over(result)
    answer = over.answer.strip()
    if over.completed:
        return answer or f"(sub-agent '{definition.name}' gave no answer)"
    why = over.note.text if over.note else over.reason
    if not answer:
        raise ToolError(f"sub-agent '{definition.name}': {why}")
    return f"{answer}\n\n[sub-agent '{definition.name}': {why}]"


def make_task_tool(definitions: dict[str, AgentDefinition], runner: SubAgentRunner) -> Tool:
    """The `task` tool offered to the main agent (register it into the ToolRunner)."""

    def task(agent: str, task: str, cancel: CancelToken) -> str:
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
        return runner.run(definition, task, cancel)

    tool = tool_from_function(task, summary_arg="agent")
    tool.parameters["properties"]["agent"]["enum"] = list(definitions)
    listing = "; ".join(f"{d.name}: {d.description}" for d in definitions.values())
    description = (
        "Run a sub-agent on a self-contained task in its own context; only its final answer comes "
        f"back (keeps your context small). Sub-agents: {listing}"
    )
    return dataclasses.replace(tool, description=description)
