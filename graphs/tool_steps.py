"""Tool steps: plan items that call one of the run's own tools directly, with no model call.

A plan may hold `{"tool": NAME, "args": {...}, "depends_on": [numbers]}` next to text steps
(LLMCompiler- and ReWOO-style plans). Such a step runs in its wave like any other (the same
`executor` branch, so checkpointing and resume are unchanged): the tool is called once with its
arguments and the step's result is the tool's output as a tool message carries it; the step is
`failed` when the tool raised or answered with an error status. A tool step waits for the steps
its `depends_on` names and the steps it refers to, nothing else: tool steps with nothing to
wait for run at once, side by side.

References. In `args`, `"$N"` names the result of step N (the numbers of
`replan.graphs.step_numbers`), and makes step N a dependency:

- a string that is exactly `"$N"` becomes step N's result, its text stripped; but where the
  tool's argument (a top-level property of its JSON schema) is of type `number` or `integer`,
  and that text holds a number (`number_written`: it is or ends in one, optionally followed by
  one short word without digits such as a unit or a currency, `"8.04672 km"`, `"kettle costs
  24.90 EUR"`; else it holds only one), it becomes that number (an integer for `integer` when
  it is whole);
- `$N` inside a longer string is replaced in place by step N's result text, stripped;
- for a *computing* tool (`replan.tools.calculator.is_computing`), every `$N` in a string
  becomes the number step N's result holds (the number it is or ends in, else the only number
  in it: `"printer paper: 4.35 EUR per box"` gives `4.35`), so `calculator("$1 * 12")` computes;
  a result with no such number goes in as text, and the tool says what is wrong with it;
- strings inside lists and objects are treated the same way (numbers only at the top level);
- a tool step whose referenced step did not end `done` is not run: it fails, saying so;
- in a computing tool's arguments, a `$N` that names no step of the plan (nor a done one) is
  read as the plain number N when the plan is taken: small models write "$12 * 3.50" for
  twelve at 3.50 (`money_as_numbers`).

Dedupe. A tool step whose tool and arguments (after substitution) equal those of a tool step
already done in this run takes that step's result instead of calling the tool again (it is
recorded with `reused_from` and counted in `reused_calls`); a failed call is made again. Two
equal calls ready in the same wave: the second waits one wave and then takes the first's result.

Which tools: the run's own tools (not the task tools), minus any that need the graph's state
injected (`InjectedState`, `ToolRuntime`), which a direct call cannot give them.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import ToolNode
from pydantic import BaseModel, ValidationError

from replan.graphs.decision_modes import inline_refs
from replan.tools.arguments import validation_problems
from replan.tools.calculator import is_computing

REFERENCE = re.compile(r"\$([1-9][0-9]*)")
"""`$N`: the result of step N."""
REFERENCE_SCHEMA: dict[str, Any] = {"type": "string", "pattern": r"^\$[1-9][0-9]*$"}
"""What a non-string argument may be instead of its value: a reference `"$N"`."""
_CALL_TEXT = re.compile(r"^\s*([A-Za-z0-9_-]{1,64})\((.*)\)\s*\.?\s*$", re.S)
"""A step written as a call, `name(...)`, as small models write tool steps in a list of texts."""
_NUMBER_AT_END = re.compile(r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?:\s+[^\s\d]{1,12})?\s*$")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
NUMBER_TYPES = frozenset({"number", "integer"})
RESULT_CHARS = 160
"""How much of a result a one-line account of a tool step shows."""


def references(value: Any) -> set[int]:
    """The step numbers `value` (arguments, or any part of them) refers to."""
    if isinstance(value, str):
        return {int(number) for number in REFERENCE.findall(value)}
    if isinstance(value, Mapping):
        return set().union(*(references(item) for item in value.values()))
    if isinstance(value, list | tuple):
        return set().union(*(references(item) for item in value))
    return set()


def renumber(value: Any, numbers: Mapping[int, int]) -> Any:
    """`value` with every reference `$N` to a number of `numbers` made `$numbers[N]`."""
    if isinstance(value, str):
        return REFERENCE.sub(lambda m: f"${numbers.get(int(m[1]), int(m[1]))}", value)
    if isinstance(value, Mapping):
        return {key: renumber(item, numbers) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [renumber(item, numbers) for item in value]
    return value


def number_at_end(text: str) -> int | float | None:
    """The number `text` is, or ends in (before at most one short word such as a unit)."""
    match = _NUMBER_AT_END.search(text.strip())
    return None if match is None else _as_number(match[1])


def _as_number(written: str) -> int | float:
    number = float(written)
    return int(number) if number.is_integer() and re.fullmatch(r"-?\d+", written) else number


def number_written(text: str) -> str | None:
    """The number a result holds, as written: the one it is or ends in (`number_at_end`), else
    the only number in it; None when it holds none, or several and none at the end."""
    if match := _NUMBER_AT_END.search(text.strip()):
        return match[1]
    found = _NUMBER.findall(text)
    return found[0] if len(found) == 1 else None


def _types(schema: Mapping[str, Any]) -> set[str]:
    """The JSON types a property's schema allows (its `type`, or its `anyOf` branches')."""
    kind = schema.get("type")
    found = set(kind if isinstance(kind, list) else [kind] if kind else [])
    for branch in schema.get("anyOf") or []:
        found |= _types(branch)
    return found


def _substituted(value: Any, results: Mapping[int, str], numbers: bool) -> Any:
    def result(match: re.Match[str]) -> str:
        text = results[int(match[1])].strip()
        return (number_written(text) or text) if numbers else text

    if isinstance(value, str):
        return REFERENCE.sub(result, value)
    if isinstance(value, Mapping):
        return {key: _substituted(item, results, numbers) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_substituted(item, results, numbers) for item in value]
    return value


def substitute(
    args: Mapping[str, Any],
    results: Mapping[int, str],
    parameters: Mapping[str, Any],
    *,
    computes: bool = False,
) -> dict[str, Any]:
    """`args` with each reference replaced by the result it names (module docstring);
    `parameters` is the tool's JSON schema, whose property types decide where numbers go;
    `computes`: the tool computes, so references in its strings become numbers."""
    properties = parameters.get("properties") or {}
    out: dict[str, Any] = {}
    for name, value in args.items():
        types = _types(properties.get(name) or {})
        whole = REFERENCE.fullmatch(value) if isinstance(value, str) else None
        written = number_written(results[int(whole[1])]) if whole else None
        if written is not None and types & NUMBER_TYPES and "string" not in types:
            number = _as_number(written)
            whole_number = isinstance(number, int) or float(number).is_integer()
            out[name] = int(number) if "integer" in types and whole_number else number
        else:
            out[name] = _substituted(value, results, computes)
    return out


def money_as_numbers(value: Any, nameable: set[int]) -> Any:
    """`value` with every `$N` that names no step (`nameable` holds those that do) written as
    the plain number N: in a computing tool's expression "$12" can only mean 12."""
    if isinstance(value, str):
        return REFERENCE.sub(lambda m: m[0] if int(m[1]) in nameable else m[1], value)
    if isinstance(value, Mapping):
        return {key: money_as_numbers(item, nameable) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [money_as_numbers(item, nameable) for item in value]
    return value


def format_call(tool: str, args: Mapping[str, Any]) -> str:
    """A call as people read it: `price(item="A", quantity=2)`."""
    shown = ", ".join(
        f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in args.items()
    )
    return f"{tool}({shown})"


def first_line(text: str, limit: int = RESULT_CHARS) -> str:
    """The first non-blank line of `text`, cut to `limit` characters."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def tool_step_line(done: Mapping[str, Any]) -> str:
    """A done tool step in one line: `price(item="A") → 4.20`, saying when it failed or took an
    earlier step's result."""
    call = format_call(done["tool"], done.get("args") or {})
    status = done.get("status", "done")
    line = f"{call} → {first_line(done['result'])}"
    if "reused_from" in done:
        line += f" (same call as step {done['reused_from']}: not made again)"
    return line if status == "done" else f"{line} [{status}]"


def error_text(error: Exception) -> str:
    """The result of a tool step whose tool raised: `Error: ` and what it said."""
    said = str(error).strip() or type(error).__name__
    return said if said.startswith("Error") else f"Error: {said}"


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
    def node(self) -> ToolNode:
        """Runs one tool call; an exception becomes an error `ToolMessage` (`error_text`)."""
        tools = list(self.by_name.values())
        return ToolNode(tools, handle_tool_errors=error_text, name="tool_step")

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
        a reference `"$N"` allowed wherever an argument is not a string."""
        return [self._item_schema(name) for name in self.by_name]

    def _item_schema(self, name: str) -> dict[str, Any]:
        parameters = self.parameters[name]
        properties = {
            key: prop
            if "string" in _types(prop) or not _types(prop)
            else {"anyOf": [prop, REFERENCE_SCHEMA]}
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
            "required": ["tool", "args"],
            "additionalProperties": False,
        }

    def call_in_text(self, text: str) -> tuple[str, dict[str, Any]] | None:
        """The tool step a text step spells as a call of one of these tools, or None.

        Small models write a tool step as the text `temperature(Lisbon)` or
        `price(item="A", size=2)` (the form progress shows tool steps in). The arguments are
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

    @functools.cached_property
    def listing(self) -> str:
        """One short line per tool for a prompt: `- name(arg, ...): first sentence`."""
        lines = []
        for name, tool in self.by_name.items():
            arguments = ", ".join(self.parameters[name].get("properties") or {})
            summary = first_line(tool.description or "").split(". ")[0].rstrip(".")
            lines.append(f"- {name}({arguments}): {summary}")
        return "\n".join(lines)

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
        if schema is None:
            return []
        try:
            schema.model_validate(_placeheld(args, properties))
        except ValidationError as error:
            return [
                f"the arguments of `{tool}` do not fit its schema ({validation_problems(error)})"
            ]
        return []


def _argument(node: ast.expr, source: str) -> Any:
    """A call argument written in a step's text: a literal's value, else its text."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.get_source_segment(source, node) or ""


NO_TOOLS = OwnTools(())
"""No tool steps: what a run with `tool_steps="off"` (or no tools of its own) offers."""


def _placeheld(args: Mapping[str, Any], properties: Mapping[str, Any]) -> dict[str, Any]:
    """`args` with a stand-in value for each whole reference to a number (its type is known,
    its value only once the step it names is done)."""
    out = dict(args)
    for name, value in args.items():
        kinds = _types(properties.get(name) or {})
        if isinstance(value, str) and REFERENCE.fullmatch(value) and kinds & NUMBER_TYPES:
            out[name] = 1
    return out


def call_key(tool: str, args: Mapping[str, Any]) -> str:
    """What two calls share when they are the same call."""
    return json.dumps([tool, args], sort_keys=True, ensure_ascii=False, default=str)


def same_call(
    tool: str, args: Mapping[str, Any], earlier: Sequence[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    """The last done tool step of `earlier` that made this call, if any."""
    key = call_key(tool, args)
    return next(
        (
            done
            for done in reversed(earlier)
            if done.get("status", "done") == "done"
            and "tool" in done
            and call_key(done["tool"], done.get("args") or {}) == key
        ),
        None,
    )
