"""Tool steps: plan items that call one of the run's own tools directly, with no model call.

A plan may hold `{"tool": NAME, "args": {...}, "depends_on": [numbers]}` next to text steps
(LLMCompiler- and ReWOO-style plans). Such a step runs in its wave like any other (the same
`executor` branch, so checkpointing and resume are unchanged): the tool is called once with its
arguments and the step's result is the tool's output as a tool message carries it; the step is
`failed` when the tool raised, answered with an error status, or answered with a JSON object
whose `error` field holds something (`says_error`), so that the replanner sees it before the
plan goes on. A tool step waits for the steps
its `depends_on` names, the steps it refers to and, where something acts, the steps before it
in plan order (`replan.graphs.plan.numbering`): look-ups with nothing to wait for run at once,
side by side.

References. In `args`, `"$N"` names the result of step N (the numbers of
`replan.graphs.plan.numbering`), `"$N.field"`, `"$N.items[0]"` a part of it (the grammar and its
paths: `replan.graphs.plan.references`), and makes step N a dependency:

- a string that is exactly a reference with a path becomes the part it names, as the value it
  is, fitted to the argument's type (`_into`): a number where a number goes, text (a number
  written out) where text goes, a JSON object or list only where one may go (`WholeResult`
  where only text may); a path that names nothing raises `UnresolvedPath`, and the step fails
  without a call, saying what is there;
- a string that is exactly `"$N"` for an argument of type `array` or `object`, whose result is
  a JSON list or object, becomes that list or object;

- a string that is exactly `"$N"` becomes step N's result, its text stripped; but where the
  tool's argument (a top-level property of its JSON schema) is of type `number` or `integer`,
  and that text holds a number (`number_written`: it is or ends in one, optionally followed by
  one short word without digits such as a unit or a currency, `"3.75 m"`, `"the lamp costs
  18.40 CHF"`; else it holds only one), it becomes that number (an integer for `integer` when
  it is whole); a JSON object or list that holds no such number does not go into a number
  argument: the step fails without a call (`WholeResult`, naming a field that holds a number);
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
- in a computing tool's arguments, a `$N` that names no step of the plan (nor a done one), and
  an amount that is no reference (`$2.50`, `$1,000`), is read as the plain number when the plan
  is taken: small models write "$40 * 1.25" for forty at 1.25 (`money_as_numbers`).

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

from replan.graphs.plan.references import (
    REFERENCE,
    as_text,
    parsed,
    renumber,
    resolve,
    shape,
)

_NUMBER_AT_END = re.compile(r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?:\s+[^\s\d]{1,12})?\s*$")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
NUMBER_TYPES = frozenset({"number", "integer"})
RESULT_CHARS = 160
"""How much of a result a one-line account of a tool step shows."""


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
    """A reference puts a JSON object or list into a string or number argument. The hint names
    the first field (for a number, the first field holding one) or the first item."""

    def __init__(self, argument: str, reference: str, value: Any, *, number: bool = False) -> None:
        self.argument = argument
        self.shape = f"{reference} is {shape(value)}"
        fields = (
            [k for k, v in value.items() if _is_number(v) or not number]
            if isinstance(value, dict)
            else []
        )
        if fields:
            self.shape += f': name the field it needs, as "{reference}.{fields[0]}"'
        elif isinstance(value, list) and value:
            self.shape += f': name the item it needs, as "{reference}[0]"'
        super().__init__(f"{argument}: {self.shape}")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _single_value(argument: str, step: int, text: str) -> str | None:
    """What a whole reference to `text` (step `step`'s result) puts into the string `argument`:
    the one value of a one-field JSON object, None for any other text; `WholeResult` for any
    other JSON object or list."""
    value = parsed(text)
    if value is None:
        return None
    if isinstance(value, dict) and len(value) == 1:
        (single,) = value.values()
        if isinstance(single, str | int | float) and not isinstance(single, bool):
            return str(single)
    raise WholeResult(argument, f"${step}", value)


def _named(match: re.Match[str], results: Mapping[int, str]) -> Any:
    """What a reference names: step N's result text (stripped), or what its path picks."""
    step, path = int(match[1]), match[2]
    text = results[step].strip()
    return resolve(step, text, path) if path else text


def _substituted(value: Any, results: Mapping[int, str], numbers: bool) -> Any:
    def result(match: re.Match[str]) -> str:
        text = as_text(_named(match, results))
        return (number_written(text) or text) if numbers else text

    if isinstance(value, str):
        whole = REFERENCE.fullmatch(value)
        if whole and whole[2] and not numbers:
            return _named(whole, results)  # a part of a result, as the value it is
        return REFERENCE.sub(result, value)
    if isinstance(value, Mapping):
        return {key: _substituted(item, results, numbers) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_substituted(item, results, numbers) for item in value]
    return value


def _into(argument: str, types: set[str], reference: str, value: Any) -> Any:
    """A value a path picked, as the argument of `types` takes it: a number where a number
    goes (also one a text holds), text where text goes, a JSON object or list only where one
    may go (`WholeResult` where only text may)."""
    if isinstance(value, dict | list):
        if types and not types & {"array", "object"}:
            raise WholeResult(argument, reference, value)
        return value
    if isinstance(value, bool) or value is None:
        return value if not types or types & {"boolean", "null"} else as_text(value)
    if types & NUMBER_TYPES and "string" not in types:
        written = number_written(str(value))
        return value if written is None else _typed(_as_number(written), types)
    return value if not types or not isinstance(value, int | float) else as_text(value)


def _typed(number: int | float, types: set[str]) -> int | float:
    whole_number = isinstance(number, int) or float(number).is_integer()
    return int(number) if "integer" in types and whole_number else number


def substitute(
    args: Mapping[str, Any],
    results: Mapping[int, str],
    parameters: Mapping[str, Any],
    *,
    computes: bool = False,
) -> dict[str, Any]:
    """`args` with each reference replaced by the result (or the part of it) it names (module
    docstring); `parameters` is the tool's JSON schema, whose property types decide where
    numbers go; `computes`: the tool computes, so references in its strings become numbers.
    Raises `WholeResult` where a JSON object or list would go into a string argument, or into
    a number argument with no number to take from it, and `UnresolvedPath` where a path names
    nothing."""
    properties = parameters.get("properties") or {}
    out: dict[str, Any] = {}
    for name, value in args.items():
        types = _types(properties.get(name) or {})
        whole = REFERENCE.fullmatch(value) if isinstance(value, str) else None
        if whole and whole[2] and not computes:
            out[name] = _into(name, types, whole[0], _named(whole, results))
            continue
        text = results[int(whole[1])].strip() if whole else ""
        written = number_written(text) if whole else None
        if whole and types & {"array", "object"} and (found := parsed(text)) is not None:
            out[name] = _into(name, types, whole[0], found)
        elif types & NUMBER_TYPES and "string" not in types and written is not None:
            out[name] = _typed(_as_number(written), types)
        elif whole and types & NUMBER_TYPES and types <= NUMBER_TYPES and not computes:
            found = parsed(text)
            if isinstance(found, dict | list):
                raise WholeResult(name, whole[0], found, number=True)
            out[name] = _substituted(value, results, computes)
        elif whole and types == {"string"} and not computes:
            single = _single_value(name, int(whole[1]), text)
            out[name] = text if single is None else single
        else:
            out[name] = _substituted(value, results, computes)
    return out


_MONEY = re.compile(r"\$([0-9][0-9,]*(?:\.[0-9]+)?)")


def money_as_numbers(value: Any, nameable: set[int]) -> Any:
    """`value` with every `$N` that names no step (`nameable` holds those that do), and every
    amount that is no reference (`$2.50`, `$1,000`), written as the plain number: in a computing
    tool's expression "$40" can only mean 40."""
    if isinstance(value, str):
        kept = {m.start() for m in REFERENCE.finditer(value) if int(m[1]) in nameable}
        return _MONEY.sub(lambda m: m[0] if m.start() in kept else m[1].replace(",", ""), value)
    if isinstance(value, Mapping):
        return {key: money_as_numbers(item, nameable) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [money_as_numbers(item, nameable) for item in value]
    return value


WITHHELD = "Error: not called"
"""How the result of a call that was not made, by a person's decision or the run's rules (a
sealed run's refusal, a call cut short by a crash and not safe to retry), begins: the call
is not asked for again."""


def withheld(result: str) -> bool:
    """Whether `result` says its call was withheld (`WITHHELD`)."""
    return result.startswith(WITHHELD)


def says_error(result: str) -> bool:
    """Whether a tool's `result` says the call failed, as many APIs answer: a JSON object whose
    `error` field holds something (`{"error": "no such file"}`)."""
    value = parsed(result)
    return isinstance(value, dict) and bool(value.get("error"))


def format_call(tool: str, args: Mapping[str, Any]) -> str:
    """A call as people read it: `area(room="A", floor=2)`."""
    shown = ", ".join(
        f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in args.items()
    )
    return f"{tool}({shown})"


def renamed_call(
    tool: str, args: Mapping[str, Any], ids: Mapping[int, int]
) -> tuple[dict[str, Any], str]:
    """A tool step's `args` with each reference's step renamed by `ids`, and the step's text
    written anew from them (`format_call`)."""
    renamed = renumber(args, ids)
    return renamed, format_call(tool, renamed)


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
