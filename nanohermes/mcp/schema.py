"""A server's input schema made into function parameters that model APIs accept.

OpenAI-compatible APIs refuse a whole request (every tool, the turn) over one tool's schema: the top
level must be `type: object` without `anyOf`/`oneOf`/`allOf`/`enum`/`not`, and every array needs
`items`. MCP servers send such schemas (a tool taking "either a path or a URL"; `list[Any]`), so:
- top-level `anyOf`/`oneOf`/`allOf` branches lend their properties to the top (only `allOf`'s stay
  required); top-level `enum`/`not`/`$schema` are dropped;
- an array without `items` gets `items: {}`; a boolean subschema (`true`) becomes `{}`.
Everything else is passed on as the server wrote it.
"""

from __future__ import annotations

from typing import Any

COMBINERS = ("anyOf", "oneOf", "allOf")
_DROPPED = frozenset({"$schema", "enum", "not", *COMBINERS})
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SUBSCHEMA_LISTS = (*COMBINERS, "prefixItems")


def normalize_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The server's input schema as a function's parameters: an object with `properties`."""
    parameters = {key: value for key, value in schema.items() if key not in _DROPPED}
    parameters["type"] = "object"
    properties = dict(schema["properties"]) if isinstance(schema.get("properties"), dict) else {}
    required = list(schema["required"]) if isinstance(schema.get("required"), list) else []
    for combiner in COMBINERS:
        branches = schema.get(combiner)
        for branch in branches if isinstance(branches, list) else []:
            if not isinstance(branch, dict) or not isinstance(branch.get("properties"), dict):
                continue
            for name, subschema in branch["properties"].items():
                properties.setdefault(name, subschema)
            if combiner == "allOf" and isinstance(branch.get("required"), list):
                required += [name for name in branch["required"] if name not in required]
    parameters["properties"] = {str(name): _subschema(value) for name, value in properties.items()}
    parameters.pop("required", None)
    if required:
        parameters["required"] = [str(name) for name in required]
    for key in ("$defs", "definitions"):
        if isinstance(parameters.get(key), dict):
            parameters[key] = {name: _subschema(value) for name, value in parameters[key].items()}
    return parameters


def _subschema(schema: Any) -> Any:
    """One nested schema, with the repairs above applied all the way down."""
    if not isinstance(schema, dict):
        return {}  # `true` (anything) or a malformed entry
    fixed = dict(schema)
    kinds = fixed.get("type")
    if (kinds == "array" or (isinstance(kinds, list) and "array" in kinds)) and "items" not in fixed:
        fixed["items"] = {}
    for key in _SUBSCHEMA_MAPS:
        if isinstance(fixed.get(key), dict):
            fixed[key] = {name: _subschema(value) for name, value in fixed[key].items()}
    for key in _SUBSCHEMA_LISTS:
        if isinstance(fixed.get(key), list):
            fixed[key] = [_subschema(value) for value in fixed[key]]
    for key in ("items", "additionalProperties", "not"):
        if isinstance(fixed.get(key), dict):
            fixed[key] = _subschema(fixed[key])
    return fixed
