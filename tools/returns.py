"""What a tool says it returns: a JSON schema from its metadata (`output_schema`, or an MCP
tool's `outputSchema`) or from its function's return annotation (a TypedDict, a pydantic model,
a dataclass, a list of them), and that schema as the few words a prompt shows, so that a plan can
name a field of a result (`$2.id`) before it has seen one."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Mapping
from typing import Any

from langchain_core.tools import BaseTool
from pydantic import PydanticUserError, TypeAdapter

SHAPE_DEPTH = 2
"""How deep into nested objects and lists a shape shown in a prompt goes."""
SHAPE_FIELDS = 10
"""How many fields of one object a shape shown in a prompt names."""
_SAYS_NOTHING = (str, int, float, bool, type(None), typing.Any, dict, list, object)


def return_schema(tool: BaseTool) -> dict[str, Any] | None:
    """The JSON schema of what `tool` returns, where it says; None where it does not (or says
    only text, a number or an untyped dict)."""
    metadata = tool.metadata or {}
    for key in ("output_schema", "outputSchema"):
        if isinstance(metadata.get(key), Mapping):
            return dict(metadata[key])
    function = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    if function is None:
        return None
    try:
        annotation = typing.get_type_hints(function).get("return", inspect.Signature.empty)
    except (NameError, TypeError):
        return None
    if annotation is inspect.Signature.empty or annotation in _SAYS_NOTHING:
        return None
    schema = _schema(annotation)
    return schema if schema.get("type") in {"object", "array"} else None


def _schema(annotation: Any) -> dict[str, Any]:
    """`annotation`'s JSON schema; a `typing.TypedDict`, which pydantic refuses before Python
    3.12, by its fields."""
    try:
        return TypeAdapter(annotation).json_schema()
    except (PydanticUserError, TypeError):
        pass
    if typing.is_typeddict(annotation):
        fields = typing.get_type_hints(annotation)
        return {"type": "object", "properties": {k: _schema(v) for k, v in fields.items()}}
    if typing.get_origin(annotation) is list and (args := typing.get_args(annotation)):
        return {"type": "array", "items": _schema(args[0])}
    return {}


def shape_of(schema: Mapping[str, Any], definitions: Mapping[str, Any] | None = None) -> str:
    """A schema as a prompt shows it: `{id, name, items: [{price}]}`; "" for a plain value."""
    return _shape(schema, definitions or schema.get("$defs") or {}, SHAPE_DEPTH)


def _shape(schema: Mapping[str, Any], definitions: Mapping[str, Any], depth: int) -> str:
    reference = schema.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        schema = definitions.get(reference.removeprefix("#/$defs/"), {})
    found = schema.get("properties")
    properties: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    is_list = schema.get("type") == "array" or "items" in schema
    if not is_list and not properties:
        return ""
    if depth < 0:
        return "…"
    if is_list:
        inner = _shape(schema.get("items") or {}, definitions, depth - 1)
        return f"[{inner}]" if inner else "[…]"
    fields = []
    for name, field in list(properties.items())[:SHAPE_FIELDS]:
        inner = _shape(field, definitions, depth - 1) if isinstance(field, Mapping) else ""
        fields.append(f"{name}: {inner}" if inner else str(name))
    more = ", …" if len(properties) > SHAPE_FIELDS else ""
    return "{" + ", ".join(fields) + more + "}"
