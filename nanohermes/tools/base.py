"""Tools as plain functions: the JSON schema the model sees comes from the signature and the
docstring's `Args:` section. A parameter annotated `CallContext` is not shown to the model: the runner
fills it in."""

from __future__ import annotations

import inspect
import json
import math
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import JSON_ERRORS, ToolError, json_problem
from nanohermes.core.types import Shown, shorten

if TYPE_CHECKING:
    from concurrent.futures import Future

SHOWN_NAMES = 5  # unknown argument names echoed, each shortened: a model may send 100,000 of them


@dataclass(frozen=True)
class CallContext:
    """What the runner hands a tool besides its arguments."""

    cancel: CancelToken = field(default_factory=CancelToken)
    granted: frozenset[Path] = frozenset()  # paths outside the workspace the user allowed


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    func: Callable[..., str | Shown]
    mutating: bool = False  # not offered in read-only mode; asks in ask mode unless preapproved
    path_arg: str | None = None  # a workspace path (`path`): confined; calls on one path run in order
    summary_arg: str | None = None
    approval_kind: str = ""  # what an "always for this session" answer covers
    context_arg: str | None = None
    risk: Callable[[dict[str, Any]], str | None] | None = None  # why a call is risky: treated as a write
    preapproved: bool = False  # a trusted MCP server's tool
    extra_arguments: bool = False  # arguments outside `properties` are passed on
    # a tool that runs elsewhere (MCP) starts a call and returns its future: no worker thread waits on it
    start: Callable[[dict[str, Any]], Future[str]] | None = None

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def parse_arguments(self, raw: str) -> dict[str, Any]:
        """Decode and check the model's JSON arguments; ToolError with a one-line reason."""
        text = (raw or "").strip() or "{}"
        try:
            args = json.loads(text)
        except json.JSONDecodeError as err:
            raise ToolError(
                f"arguments for {self.name} are not valid JSON ({err.msg} at char {err.pos})"
            ) from None
        except JSON_ERRORS as err:  # a number over Python's digit limit; deep nesting
            reason = shorten(json_problem(err), 120)
            raise ToolError(f"arguments for {self.name} could not be decoded ({reason})") from None
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise ToolError(f"arguments for {self.name} must be a JSON object, got {type(args).__name__}")
        props: dict[str, Any] = self.parameters.get("properties", {})
        unknown = sorted(set(args) - set(props))
        if unknown and not self.extra_arguments:
            allowed = ", ".join(props) or "none"
            named = ", ".join(shorten(name, 40) for name in unknown[:SHOWN_NAMES])
            more = f" and {len(unknown) - SHOWN_NAMES:,} more" if len(unknown) > SHOWN_NAMES else ""
            raise ToolError(f"{self.name} got unknown argument(s) {named}{more}; allowed: {allowed}")
        missing = [name for name in self.parameters.get("required", []) if args.get(name) is None]
        if missing:
            raise ToolError(f"{self.name} is missing required argument(s): {', '.join(missing)}")
        return {
            name: _coerce(self.name, name, value, props[name]) if name in props else value
            for name, value in args.items()
        }


def tool_from_function(
    func: Callable[..., str | Shown],
    *,
    mutating: bool = False,
    summary_arg: str | None = None,
    approval_kind: str | None = None,
    risk: Callable[[dict[str, Any]], str | None] | None = None,
) -> Tool:
    """Build a Tool from a function's signature (types, defaults) and docstring (description, Args:).
    An argument named `path` names a workspace path: the runner confines it."""
    description, arg_docs = parse_docstring(inspect.getdoc(func) or "")
    hints = typing.get_type_hints(func)
    properties: dict[str, Any] = {}
    required: list[str] = []
    context_arg = None
    for param in inspect.signature(func).parameters.values():
        annotation = hints.get(param.name, str)
        if annotation is CallContext:
            context_arg = param.name
            continue
        prop = json_schema_for(annotation)
        if param.name in arg_docs:
            prop["description"] = arg_docs[param.name]
        if param.default is param.empty:
            required.append(param.name)
        elif param.default is not None:
            prop["default"] = param.default
        properties[param.name] = prop
    name = func.__name__
    return Tool(
        name=name,
        description=description or name.replace("_", " "),
        parameters={"type": "object", "properties": properties, "required": required},
        func=func,
        mutating=mutating,
        path_arg="path" if "path" in properties else None,
        summary_arg=summary_arg or (required[0] if required else next(iter(properties), None)),
        approval_kind=approval_kind or name,
        context_arg=context_arg,
        risk=risk,
    )


_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def json_schema_for(annotation: Any) -> dict[str, Any]:
    """JSON schema of a simple Python annotation: str, int, float, bool, X | None, list[X], dict, Literal."""
    origin = typing.get_origin(annotation)
    members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    if origin in (typing.Union, types.UnionType) and len(members) == 1:
        return json_schema_for(members[0])
    if origin is typing.Literal:
        return {"type": _JSON_TYPES.get(type(members[0]), "string"), "enum": members}
    if origin is list:
        return {"type": "array", "items": json_schema_for(members[0]) if members else {}}
    if origin is dict or annotation is dict:
        return {"type": "object"}
    if annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation]}
    raise TypeError(f"no JSON schema for annotation {annotation!r}")


_ARG = re.compile(r"^    (\w+)(?: \([^)]*\))?: ", re.MULTILINE)  # `    name (type): ` in an Args: section


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring (as `inspect.getdoc` dedents it) into description and Args."""
    description, _, rest = doc.partition("\nArgs:\n")
    parts = _ARG.split(rest.split("\n\n", 1)[0])[1:]  # the section ends at a blank line
    args = {name: " ".join(text.split()) for name, text in zip(parts[::2], parts[1::2], strict=True)}
    return description.strip(), args


def _coerce(tool: str, name: str, value: Any, schema: dict[str, Any]) -> Any:
    """Accept what small models commonly send ("10" for 10, "true" for true); refuse the rest."""
    if value is None:
        return None
    kind = str(schema.get("type"))
    coerced = _coerce_type(value, kind)
    if coerced is _BAD:
        kind = "finite number" if kind == "number" else kind
        article = "an" if kind[:1] in "aeiou" else "a"
        raise ToolError(f"{tool}: argument {name} must be {article} {kind}, got {json.dumps(value)[:60]}")
    if "enum" in schema and coerced not in schema["enum"]:
        raise ToolError(f"{tool}: argument {name} must be one of {', '.join(map(str, schema['enum']))}")
    return coerced


_BAD = object()


def _coerce_type(value: Any, kind: str) -> Any:
    if kind in ("integer", "number"):
        if isinstance(value, str):
            try:
                value = float(value) if any(c in value for c in ".eE") else int(value)
            except ValueError:
                return _BAD
        if isinstance(value, bool) or not isinstance(value, int | float):
            return _BAD
        if isinstance(value, int):  # whole, and maybe past float's range (10**400): kept whole
            return value
        if not math.isfinite(value) or (kind == "integer" and not value.is_integer()):  # NaN, inf
            return _BAD
        return int(value) if kind == "integer" else value
    if kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if kind == "boolean" and isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    expected = {"string": str, "boolean": bool, "array": list, "object": dict}
    if kind in expected and not isinstance(value, expected[kind]):
        return _BAD
    return value
