"""Tool steps: plan items that call one of the run's own tools directly, with no model call.

A plan may hold `{"tool": NAME, "args": {...}, "depends_on": [numbers]}` next to text steps
(LLMCompiler- and ReWOO-style plans). Such a step runs in its wave like any other (the same
`executor` branch, so checkpointing and resume are unchanged): the tool is called once with its
arguments and the step's result is the tool's output as a tool message carries it; the step is
`failed` when the tool raised or answered with an error status. A tool step waits for the steps
its `depends_on` names and the steps it refers to, nothing else: tool steps with nothing to
wait for run at once, side by side.

References. In `args`, `"$N"` names the result of step N (the numbers of
`replan.graphs.plan.numbering`), and makes step N a dependency:

- a string that is exactly `"$N"` becomes step N's result, its text stripped; but where the
  tool's argument (a top-level property of its JSON schema) is of type `number` or `integer`,
  and that text holds a number (`number_written`: it is or ends in one, optionally followed by
  one short word without digits such as a unit or a currency, `"3.75 m"`, `"the lamp costs
  18.40 CHF"`; else it holds only one), it becomes that number (an integer for `integer` when
  it is whole);
- `$N` inside a longer string is replaced in place by step N's result text, stripped;
- for a *computing* tool (`replan.tools.calculator.is_computing`), every `$N` in a string
  becomes the number step N's result holds (the number it is or ends in, else the only number
  in it: `"lamp oil: 2.15 CHF per litre"` gives `2.15`), so `calculator("$1 * 8")` computes;
  a result with no such number goes in as text, and the tool says what is wrong with it;
- where the tool's argument is of type `string` (and the tool does not compute), a string
  that is exactly `"$N"` whose result is a JSON object with one field holding one value
  (`{"folder": "docs"}`) becomes that value; a result that is any other JSON object or list
  does not go into a string: the step is not run and fails, naming the result's fields, so
  that the replanner can write the value itself (`WholeResult`);
- strings inside lists and objects are treated the same way (numbers only at the top level);
- a tool step whose referenced step did not end `done` is not run: it fails, saying so;
- in a computing tool's arguments, a `$N` that names no step of the plan (nor a done one) is
  read as the plain number N when the plan is taken: small models write "$40 * 1.25" for
  forty at 1.25 (`money_as_numbers`).

Dedupe. A tool step whose tool and arguments (after substitution) equal those of a tool step
already done in this run takes that step's result instead of calling the tool again (it is
recorded with `reused_from` and counted in `reused_calls`); a failed call is made again. Two
equal calls ready in the same wave: the second waits one wave and then takes the first's result.

Which tools: the run's own tools (not the task tools), minus any that need the graph's state
injected (`InjectedState`, `ToolRuntime`), which a direct call cannot give them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

REFERENCE = re.compile(r"\$([1-9][0-9]*)")
"""`$N`: the result of step N."""
REFERENCE_SCHEMA: dict[str, Any] = {"type": "string", "pattern": r"^\$[1-9][0-9]*$"}
"""What a non-string argument may be instead of its value: a reference `"$N"`."""
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


class WholeResult(ValueError):
    """A whole reference puts a JSON object or list into a string argument."""

    def __init__(self, argument: str, step: int, shape: str) -> None:
        self.argument, self.shape = argument, f"step {step}'s result is {shape}"
        super().__init__(f"{argument}: {self.shape}")


def _single_value(argument: str, step: int, text: str) -> str | None:
    """What a whole reference to `text` (step `step`'s result) puts into the string `argument`:
    the one value of a one-field JSON object, None for any other text; `WholeResult` for any
    other JSON object or list."""
    if not text.startswith(("{", "[")):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    if isinstance(parsed, dict) and len(parsed) == 1:
        (value,) = parsed.values()
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            return str(value)
    if isinstance(parsed, dict):
        fields = ", ".join(map(str, parsed))
        raise WholeResult(argument, step, f"a JSON object with the fields {fields}")
    if isinstance(parsed, list):
        raise WholeResult(argument, step, f"a JSON list of {len(parsed)} items")
    return None


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
    `computes`: the tool computes, so references in its strings become numbers. Raises
    `WholeResult` where a JSON object or list would go into a string argument."""
    properties = parameters.get("properties") or {}
    out: dict[str, Any] = {}
    for name, value in args.items():
        types = _types(properties.get(name) or {})
        whole = REFERENCE.fullmatch(value) if isinstance(value, str) else None
        text = results[int(whole[1])].strip() if whole else ""
        written = number_written(text) if whole else None
        if written is not None and types & NUMBER_TYPES and "string" not in types:
            number = _as_number(written)
            whole_number = isinstance(number, int) or float(number).is_integer()
            out[name] = int(number) if "integer" in types and whole_number else number
        elif whole and types == {"string"} and not computes:
            single = _single_value(name, int(whole[1]), text)
            out[name] = text if single is None else single
        else:
            out[name] = _substituted(value, results, computes)
    return out


def money_as_numbers(value: Any, nameable: set[int]) -> Any:
    """`value` with every `$N` that names no step (`nameable` holds those that do) written as
    the plain number N: in a computing tool's expression "$40" can only mean 40."""
    if isinstance(value, str):
        return REFERENCE.sub(lambda m: m[0] if int(m[1]) in nameable else m[1], value)
    if isinstance(value, Mapping):
        return {key: money_as_numbers(item, nameable) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [money_as_numbers(item, nameable) for item in value]
    return value


def format_call(tool: str, args: Mapping[str, Any]) -> str:
    """A call as people read it: `area(room="A", floor=2)`."""
    shown = ", ".join(
        f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in args.items()
    )
    return f"{tool}({shown})"


def first_line(text: str, limit: int = RESULT_CHARS) -> str:
    """The first non-blank line of `text`, cut to `limit` characters."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def tool_step_line(done: Mapping[str, Any]) -> str:
    """A done tool step in one line: `area(room="A") → 12.5`, saying when it failed or took an
    earlier step's result."""
    call = format_call(done["tool"], done.get("args") or {})
    status = done.get("status", "done")
    line = f"{call} → {first_line(done['result'])}"
    if "reused_from" in done:
        line += f" (same call as step {done['reused_from']}: not made again)"
    return line if status == "done" else f"{line} [{status}]"


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
