"""Tool calls: streamed deltas → complete calls, and calls written as text.

A delta joins a call by its known `id`; else by a fresh `id` that continues the current call while its
arguments are incomplete (LM Studio sends a fresh id and no name on every chunk); else by `index` (or
the last call). A named delta after complete arguments starts a new call (several calls at index 0
without ids). Repeated names (llama-cpp-python, LiteLLM) are not doubled.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nanohermes.core.errors import JSON_ERRORS
from nanohermes.core.types import ToolCall


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


_STRUCTURE = re.compile(r'\\.?|[{}"]', re.DOTALL)
"""What opens or closes an object or a string, and an escape with the character it escapes."""


@dataclass
class _Slot:
    """One call being assembled. Its arguments are scanned as they arrive (braces outside strings), so
    that they are parsed only when an object may have closed: parsing on every delta is quadratic."""

    id: str
    index: int | None
    name: str = ""
    parts: list[str] = field(default_factory=list)
    begun: bool = False  # the arguments hold more than whitespace
    _depth: int = 0
    """Objects open; -1: the text can no longer become one object (a stray `}`, text after it).
    Begun text at depth 0 is one whole value: it is parsed (once), and anything more spoils it."""
    _in_string: bool = False
    _escape_next: bool = False
    _verdict: bool | None = None

    def arguments(self) -> str:
        if len(self.parts) > 1:
            self.parts = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    def append(self, text: str) -> None:
        self.parts.append(text)
        if self.begun and self._depth == 0 and text.strip():
            self._depth = -1
        self.begun = self.begun or bool(text.strip())
        if self._depth < 0 or not text:
            return
        at, self._escape_next = int(self._escape_next), False
        for match in _STRUCTURE.finditer(text, at):
            token = match.group()
            if self._in_string:
                self._in_string, self._escape_next = token != '"', token == "\\"
            elif token == '"':
                self._in_string = True
            elif token in "{}":
                self._depth += 1 if token == "{" else -1
                if self._depth == 0 and text[match.end() :].strip():
                    self._depth = -1
                if self._depth < 0:
                    return

    def replace(self, text: str) -> None:
        fresh = _Slot(self.id, self.index, self.name)
        fresh.append(text)
        self.__dict__.update(fresh.__dict__)

    def arguments_complete(self) -> bool:
        if self._depth != 0 or not self.begun:
            return False
        if self._verdict is None:
            try:
                self._verdict = isinstance(json.loads(self.arguments()), dict)
            except JSON_ERRORS:
                self._verdict = False
        return self._verdict


class ToolCallAccumulator:
    """Feed every `delta.tool_calls` entry to `add`; read the finished calls from `calls()`."""

    def __init__(self, new_id: Callable[[], str] = new_call_id) -> None:
        self._new_id = new_id
        self._slots: list[_Slot] = []
        self._by_id: dict[str, _Slot] = {}
        self._by_index: dict[int, _Slot] = {}

    def add(self, delta: Mapping[str, Any]) -> None:
        call_id = _text(delta.get("id"))
        raw_index = delta.get("index")
        index = raw_index if isinstance(raw_index, int) and not isinstance(raw_index, bool) else None
        function = delta.get("function")
        function = function if isinstance(function, Mapping) else {}
        name = _text(function.get("name"))
        arguments = function.get("arguments")
        slot = self._slot_for(call_id, index, name, has_arguments=bool(arguments))
        if name and name != slot.name:
            # A repeated or cumulative name replaces; a fragment is appended.
            slot.name = name if name.startswith(slot.name) else slot.name + name
        if isinstance(arguments, str):
            slot.append(arguments)
        elif arguments is not None:  # an object (or a list, a number: refused by the tool layer)
            slot.replace(json.dumps(arguments, ensure_ascii=False))

    def _slot_for(self, call_id: str, index: int | None, name: str, *, has_arguments: bool) -> _Slot:
        known = self._by_id.get(call_id) if call_id else None
        if known is not None:
            if index is None or known.index in (None, index):
                return self._start(call_id, index) if _another(known, name, has_arguments) else known
            # The same id at another index: a second call that reuses the id, not more of the first.
            return self._by_index.get(index) or self._start(call_id, index)
        current = self._by_index.get(index) if index is not None else next(reversed(self._slots), None)
        if call_id:
            if current is not None and _continues(current, name):
                self._by_id[call_id] = current  # LM Studio: a fresh id on every chunk
                return current
            return self._start(call_id, index)
        if current is None or _another(current, name, has_arguments):
            return self._start("", index)  # the first call, or several calls at one index without ids
        return current

    def _start(self, call_id: str, index: int | None) -> _Slot:
        slot = _Slot(id=call_id, index=index)
        self._slots.append(slot)
        if call_id:
            self._by_id[call_id] = slot
        if index is not None:
            self._by_index[index] = slot
        return slot

    def calls(self) -> list[ToolCall]:
        """The calls in order; a repeated id is replaced (strict servers refuse two results under one)."""
        calls: list[ToolCall] = []
        seen: set[str] = set()
        for slot in self._slots:
            arguments = slot.arguments()
            if not slot.name and not arguments.strip():
                continue
            call_id = slot.id if slot.id and slot.id not in seen else self._new_id()
            seen.add(call_id)
            calls.append(ToolCall(call_id, slot.name.strip(), arguments if arguments.strip() else "{}"))
        return calls


def _another(current: _Slot, name: str, has_arguments: bool) -> bool:
    """Whether a named delta starts a new call after `current`'s complete arguments."""
    if not (name and current.name and current.arguments_complete()):
        return False
    return has_arguments or name != current.name


def _continues(current: _Slot, name: str) -> bool:
    """Whether a delta under a new id continues `current` (no name, or the same name, while its
    arguments are begun and incomplete)."""
    if current.arguments_complete():
        return False
    return not name or (name == current.name and current.begun)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


# ---------------------------------------------------------------------------------------------------
# Calls written as text (models served without a tool-call parser)

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FENCED = re.compile(r"\A```(?:json)?\s*(.*?)\s*```\Z", re.DOTALL)


def extract_text_tool_calls(content: str, tool_names: set[str]) -> tuple[str, list[ToolCall]]:
    """The text without its calls, and the calls: `<tool_call>` blocks, or a whole message that is a bare
    or fenced `{"name": …, "arguments": …}` object or list naming offered tools. The rest stays text."""
    if "<tool_call>" in content:
        calls: list[ToolCall] = []

        def take(match: re.Match[str]) -> str:
            found = _parse_calls(match.group(1), tool_names, need_arguments=False)
            calls.extend(found or [])
            return match.group() if found is None else ""

        kept = _TAGGED.sub(take, content)
        if calls:
            return kept.strip(), calls
    stripped = content.strip()
    fenced = _FENCED.match(stripped)
    candidate = fenced.group(1) if fenced else stripped
    if candidate[:1] in ("{", "["):
        found = _parse_calls(candidate, tool_names, need_arguments=True)
        if found:
            return "", found
    return content, []


def _parse_calls(text: str, tool_names: set[str], *, need_arguments: bool) -> list[ToolCall] | None:
    try:
        value = json.loads(text)
    except JSON_ERRORS:
        return None
    items = value if isinstance(value, list) else [value]
    calls = [_parse_call(item, tool_names, need_arguments=need_arguments) for item in items]
    return [call for call in calls if call is not None] if calls and None not in calls else None


def _parse_call(item: Any, tool_names: set[str], *, need_arguments: bool) -> ToolCall | None:
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict):  # {"type": "function", "function": {...}}
        item = item["function"]
    name = item.get("name")
    if not isinstance(name, str) or name not in tool_names:
        return None
    if need_arguments and "arguments" not in item and "parameters" not in item:
        return None
    arguments = item["arguments"] if "arguments" in item else item.get("parameters")
    if isinstance(arguments, dict):
        text = json.dumps(arguments, ensure_ascii=False)
    elif isinstance(arguments, str | None):
        text = (arguments or "").strip() or "{}"
    else:
        return None
    return ToolCall(id=new_call_id(), name=name, arguments=text)
