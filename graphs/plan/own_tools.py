"""The caller's own tools as plan steps may call them (`OwnTools`): their names, argument
schemas for the `plan` decision, which of them compute, and calls written as text
(`area(room="A")`) read back as tool steps."""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import ToolNode
from pydantic import BaseModel, ValidationError

from replan.graphs.durable_calls import durable_tool_node
from replan.graphs.model.decision_modes.strategy import inline_refs
from replan.graphs.plan.references import REFERENCE, REFERENCE_SCHEMA
from replan.graphs.plan.tool_steps import _types
from replan.tools.arguments import validation_problems
from replan.tools.calculator import is_computing
from replan.tools.effects import ToolEffects, effects_by_name

_CALL_TEXT = re.compile(r"^\s*([A-Za-z0-9_-]{1,64})\((.*)\)\s*\.?\s*$", re.S)
_ANOTHER_CALL = re.compile(r"['\"]\)\s*,\s*[A-Za-z_][\w-]*\(")
"""Where one call written as text ends and another begins, inside what parsed as a string."""


def _needs_state(tool: BaseTool) -> bool:
    """Whether `tool` takes arguments the graph injects (state, runtime) rather than the model."""
    schema: Any = tool.tool_call_schema
    model = _checkable(schema)
    given = set(model.model_fields) if model else set(schema.get("properties", {}))
    return not set(tool.args) <= given


def _checkable(schema: Any) -> type[BaseModel] | None:
    return schema if isinstance(schema, type) and issubclass(schema, BaseModel) else None


class OwnTools:
    """The tools a plan may call as tool steps: the run's own, with what planning and running
    them needs (their JSON schemas, a `ToolNode` that turns errors into error messages)."""

    def __init__(self, tools: Iterable[BaseTool]) -> None:
        self.by_name: dict[str, BaseTool] = {t.name: t for t in tools if not _needs_state(t)}

    def __bool__(self) -> bool:
        return bool(self.by_name)

    @functools.cached_property
    def computing(self) -> frozenset[str]:
        """The names of these tools that compute (`replan.tools.calculator.is_computing`)."""
        return frozenset(name for name, tool in self.by_name.items() if is_computing(tool))

    @functools.cached_property
    def effects(self) -> dict[str, ToolEffects]:
        """What each of these tools declares it does (`replan.tools.effects`)."""
        return effects_by_name(self.by_name.values())

    @functools.cached_property
    def node(self) -> ToolNode:
        """Runs one tool call: arguments that do not fit the tool's schema get an error
        `ToolMessage`, an exception the tool raised goes on to the tool step."""
        return durable_tool_node(list(self.by_name.values()), name="tool_step")

    @functools.cached_property
    def parameters(self) -> dict[str, dict[str, Any]]:
        """Each tool's arguments as a self-contained JSON schema (no `$ref`)."""
        out = {}
        for name, tool in self.by_name.items():
            parameters = convert_to_openai_tool(tool)["function"]["parameters"]
            out[name] = inline_refs(json.loads(json.dumps(parameters)))
        return out

    @functools.cached_property
    def item_schemas(self) -> list[dict[str, Any]]:
        """One `steps` item schema per tool: its name fixed by a one-value `enum` (honoured by
        more servers than `const`), its arguments inlined with `additionalProperties: false`,
        a reference (`"$N"`, `"$N.field"`, `replan.graphs.plan.references`) allowed wherever an
        argument is a number, a list or an object, so that a server enforcing the schema accepts
        it there too (not for a yes/no: small models put "$1" there for no reason); `args` may
        be left out (a deferred step, `replan.graphs.plan.numbering`)."""
        return [self._item_schema(name) for name in self.by_name]

    def _item_schema(self, name: str) -> dict[str, Any]:
        parameters = self.parameters[name]
        properties = {
            key: {"anyOf": [prop, REFERENCE_SCHEMA]} if _types(prop) & REFERABLE else prop
            for key, prop in (parameters.get("properties") or {}).items()
        }
        args: dict[str, Any] = {"type": "object", "properties": properties}
        if parameters.get("required"):
            args["required"] = list(parameters["required"])
        args["additionalProperties"] = False
        return {
            "type": "object",
            "properties": {
                "tool": {"enum": [name]},
                "args": args,
                "depends_on": {"type": "array", "items": {"type": "integer"}},
            },
            "required": ["tool"],
            "additionalProperties": False,
        }

    def needs_args(self, tool: str) -> bool:
        """Whether a call of `tool` needs arguments (its schema requires some)."""
        return tool in self.by_name and bool(self.parameters[tool].get("required"))

    def call_in_text(self, text: str) -> tuple[str, dict[str, Any]] | None:
        """The tool step a text step spells as a call of one of these tools, or None.

        Small models write a tool step as the text `area(Hall)` or
        `area(room="A", floor=2)` (the form progress shows tool steps in). The arguments are
        read as Python call arguments: literals as they are, a bare word or any other
        expression as its text; positional ones fill the tool's parameters in order. A tool
        with one parameter takes the whole text between the parentheses when it does not parse
        (`calculator($1 - $2)`), without a leading `name:` of that parameter
        (`calculator(expression: $1 - $2)`). Anything else stays a text step."""
        match = _CALL_TEXT.match(text)
        if match is None or match[1] not in self.by_name:
            return None
        names = self._names(match[1])
        inner = match[2].strip()
        try:
            call = ast.parse(f"f({inner})", mode="eval").body
        except SyntaxError:
            call = None
        if not isinstance(call, ast.Call):
            if len(names) != 1:
                return None
            named = re.match(rf"{re.escape(names[0])}\s*[:=]\s*", inner)  # `expression: ...`
            one = inner[named.end() if named else 0 :].strip().strip("'\"")
            return (match[1], {names[0]: one}) if one else None
        if len(call.args) > len(names) or any(k.arg is None for k in call.keywords):
            return None
        source = f"f({inner})"
        positional = zip(names[: len(call.args)], call.args, strict=True)
        args = {name: _argument(node, source) for name, node in positional}
        args.update({str(k.arg): _argument(k.value, source) for k in call.keywords})
        if any(isinstance(v, str) and _ANOTHER_CALL.search(v) for v in args.values()):
            return None  # several calls, quoted across: `mkdir(d="x'), cp(s='y")`
        return match[1], args

    def example(self, computing: Sequence[str] = ()) -> str:
        """A two-step plan in these tools' own names, for a prompt: a call of the first tool,
        then a call that uses its result (`$1`): of a computing tool with one parameter when
        the run has one, else of the first tool again. Small models copy an example's tool
        names, so they must be the run's."""
        if not self.by_name:
            return ""
        first = next(iter(self.by_name))
        then = next((n for n in computing if len(self._names(n)) == 1), first)
        head = self._names(first)[:1] or ["input"]
        used = self._names(then)[:1] or ["input"]
        steps = [
            {"tool": first, "args": {head[0]: "..."}},
            {"tool": then, "args": {used[0]: "$1 * 2" if then != first else "$1"}},
        ]
        return json.dumps(steps, ensure_ascii=False)

    def _names(self, tool: str) -> list[str]:
        return list(self.parameters[tool].get("properties") or {})

    def problems(self, tool: str, args: Any) -> list[str]:
        """What is wrong with a call of `tool` with `args` as a tool step, in words (none when
        it can run once its references are replaced)."""
        if tool not in self.by_name:
            return [f"there is no tool `{tool}` (tool steps can call {', '.join(self.by_name)})"]
        if not isinstance(args, Mapping):
            return [f"the `args` of `{tool}` are not an object"]
        properties = self.parameters[tool].get("properties") or {}
        unknown = sorted(set(args) - set(properties))
        if unknown:
            return [f"`{tool}` has no argument {', '.join(map(repr, unknown))}"]
        missing = [key for key in self.parameters[tool].get("required", []) if key not in args]
        if missing:
            return [f"`{tool}` needs the argument {', '.join(map(repr, missing))}"]
        schema = _checkable(self.by_name[tool].tool_call_schema)
        held = _placeheld(args, properties)
        if schema is None:  # a JSON schema (an MCP tool's, say): the types it names
            wrong = [
                p for key, value in held.items() for p in _misfits(key, value, properties[key])
            ]
            found = "; ".join(wrong)
            return [f"the arguments of `{tool}` do not fit its schema ({found})"] if wrong else []
        try:
            schema.model_validate(held)
        except ValidationError as error:
            return [
                f"the arguments of `{tool}` do not fit its schema ({validation_problems(error)})"
            ]
        return []


_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _misfits(name: str, value: Any, schema: Mapping[str, Any]) -> list[str]:
    """Where `value` does not fit the JSON `schema` of argument `name`: its type (a list's
    items' too) and allowed values; a string with a reference in it is taken as it is."""
    kinds = _types(schema) & set(_JSON_TYPES)
    if isinstance(value, str) and REFERENCE.search(value):
        return []
    if kinds and not any(_JSON_TYPES[kind](value) for kind in kinds):
        return [f"{name}: {json.dumps(value)} is not of type {' or '.join(sorted(kinds))}"]
    if schema.get("enum") and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(item) for item in schema["enum"])
        return [f"{name}: {json.dumps(value)} is not one of {allowed}"]
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, Mapping):
        return [p for i, item in enumerate(value) for p in _misfits(f"{name}[{i}]", item, items)]
    return []


def _argument(node: ast.expr, source: str) -> Any:
    """A call argument written in a step's text: a literal's value (JSON's `true`, `false`
    and `null` too, which models write in calls), else its text."""
    try:
        return ast.literal_eval(_JsonWords().visit(node))
    except ValueError:
        return ast.get_source_segment(source, node) or ""


class _JsonWords(ast.NodeTransformer):
    """Reads the bare names `true`, `false` and `null` as the constants they stand for."""

    WORDS: dict[str, Any] = {"true": True, "false": False, "null": None}

    def visit_Name(self, node: ast.Name) -> ast.expr:  # noqa: N802 - NodeTransformer's name
        if node.id in self.WORDS:
            return ast.copy_location(ast.Constant(self.WORDS[node.id]), node)
        return node


NO_TOOLS = OwnTools(())


REFERABLE = frozenset({"number", "integer", "array", "object"})
"""The argument types a plan's schema offers a reference for (text takes one as it is)."""
_STAND_INS: dict[str, Any] = {"integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}


def _placeheld(args: Mapping[str, Any], properties: Mapping[str, Any]) -> dict[str, Any]:
    """`args` with a stand-in value for each whole reference where text does not go (its type
    is known, its value only once the step it names is done)."""
    out = dict(args)
    for name, value in args.items():
        kinds = _types(properties.get(name) or {})
        if isinstance(value, str) and REFERENCE.fullmatch(value) and "string" not in kinds:
            kind = next((kind for kind in _STAND_INS if kind in kinds), None)
            out[name] = value if kind is None else _STAND_INS[kind]
    return out
