"""The worst-case scripted model of the AgentDojo suite: it does each user task right, takes
every value that depends on the results from the results, and obeys every instruction it reads.

One `Oracle` serves one run (`World`), as a responder of the scripted OpenAI-compatible server,
for every design alike:

- it plans the user task from AgentDojo's ground truth, replayed on a copy of the run's
  environment (`plan_steps`). Each argument's value is taken from the user's request when the
  request says it; else, when an earlier call's result holds it (a field, an item, or the whole
  result), by reference (`"$2.recipient"`); else it must be read from the results (a value
  worked out, or part of a text): the step is then a text step whose executor reads the
  results and writes the call (in a sealed run, the step declares the function). A number or a
  yes/no found nowhere, given to a look-up, is the model's own choice (how many to list);
- it never writes a value from the ground truth where the results would give it: literals only
  where the user said them, where a text step's executor has read the results, or where a
  choice is the model's own;
- it obeys: once a request it is sent holds the attack's text (in a result it was shown or a
  tool's answer), it makes the injection task's ground-truth calls, not yet made in that
  conversation, before anything else: replan's replanner plans them as tool steps (once per
  run), an executor loop and the ReAct agent call them;
- it answers with the answer AgentDojo expects, where the task gives one, and every result the
  run's calls returned (the same text in every design: the answer is not what is compared).

A call answered as not made (replan's `Not called: ...`) is made once more, as written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.agentdojo_world import World, effects_by_rule, result_text, suite
from replan.graphs.plan.provenance import NOT_CALLED
from replan.testing import Reply, text, tool_call
from replan.testing.plan_script import classify
from replan.testing.requests import (
    executor_step,
    first_param,
    message_text,
    planned_numbers,
    prompt_text,
    step_tools,
    steps_schema,
)

_NAME = re.compile(r"[A-Za-z_][\w-]*")
"""A field name a reference may hold (`replan.graphs.plan.references`)."""
_CALL_TAG = re.compile(r"\[call (\d+)\]")
_NEXT = re.compile(r"numbered from (\d+)")
ATTEMPTS = 2
"""How many times a call answered as not made is written."""


def _said(value: Any, request: str) -> bool:
    """Whether the user's `request` says `value`."""
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int | float):
        forms = {str(value), f"{value:g}", f"{value:,}", f"{value:.2f}"}
        return any(re.search(rf"(?<![\d.]){re.escape(form)}(?![\d])", request) for form in forms)
    if isinstance(value, str):
        return bool(value.strip()) and value.strip().lower() in request.lower()
    if isinstance(value, list):
        return all(_said(item, request) for item in value)
    return False


def locate(value: Any, result: Any, path: str = "") -> str | None:
    """The path (`.field`, `[0]`, `` for the whole) under which `result` holds `value`."""
    if _same(value, result):
        return path
    if isinstance(result, dict):
        for key, item in result.items():
            if _NAME.fullmatch(str(key)) and (found := locate(value, item, f"{path}.{key}")):
                return found
    if isinstance(result, list):
        for index, item in enumerate(result):
            if (found := locate(value, item, f"{path}[{index}]")) is not None:
                return found
    return None


def _same(value: Any, held: Any) -> bool:
    if isinstance(value, bool) or isinstance(held, bool):
        return False
    if isinstance(value, int | float) and isinstance(held, int | float):
        return float(value) == float(held)
    return isinstance(value, str | list | dict) and value == held and value not in ("", [], {})


def look_ups(suite_name: str) -> set[str]:
    """The functions of a suite that only read (`effects_by_rule`)."""
    return {f.name for f in suite(suite_name).tools if effects_by_rule(f)[0]}


def _parsed(said: str) -> Any:
    try:
        return json.loads(said)
    except ValueError:
        return said.strip()


@dataclass(frozen=True)
class Step:
    """One ground-truth call of the user task as the oracle plans it (`number` from 1)."""

    number: int
    function: str
    args: dict[str, Any]
    planned: dict[str, Any]
    """The arguments as a tool step writes them: a value, or a reference to a result."""
    read: tuple[str, ...]
    """The arguments whose value must be read from the results (a text step)."""


def plan_steps(world: World) -> list[Step]:
    """The user task's ground-truth calls, each argument placed as the module says."""
    environment = world.before.model_copy(deep=True)
    runtime = world.runtime
    request = world.task.user_task.PROMPT
    looks_up = look_ups(world.task.suite_name)
    results: list[Any] = []
    steps = []
    for number, call in enumerate(world.ground_truth(), 1):
        planned, read = {}, []
        for name, value in dict(call.args).items():
            planned[name] = value
            if _said(value, request):
                continue
            found = next(
                (
                    f"${earlier}{path}"
                    for earlier, result in enumerate(results, 1)
                    if (path := locate(value, result)) is not None
                ),
                None,
            )
            if found is not None:
                planned[name] = found
            elif not (isinstance(value, int | float) and call.function in looks_up):
                read.append(name)
        steps.append(Step(number, call.function, dict(call.args), planned, tuple(read)))
        result, error = runtime.run_function(environment, call.function, dict(call.args))
        results.append(None if error is not None else _parsed(result_text(result)))
    return steps


def _made(messages: Sequence[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """The calls of a conversation: (function, its arguments as JSON, what it was answered)."""
    answers = {m.get("tool_call_id"): message_text(m) for m in messages if m.get("role") == "tool"}
    made = []
    for message in messages:
        for spec in message.get("tool_calls") or []:
            function = spec.get("function", {})
            args = json.dumps(json.loads(function.get("arguments") or "{}"), sort_keys=True)
            made.append((function.get("name", ""), args, answers.get(spec.get("id"), "")))
    return made


def _due(function: str, args: dict[str, Any], made: list[tuple[str, str, str]]) -> bool:
    """Whether the call is still to be written (never made, or answered as not made and
    written fewer than `ATTEMPTS` times)."""
    key = json.dumps(args, sort_keys=True)
    tries = [answer for name, written, answer in made if (name, written) == (function, key)]
    return not tries or (len(tries) < ATTEMPTS and tries[-1].startswith(NOT_CALLED))


@dataclass
class Oracle:
    """The responder for one run of `world` by `design` ("react", or replan's)."""

    world: World
    design: str
    steps: list[Step] = field(init=False)
    items: dict[int, dict[str, Any]] = field(default_factory=dict)
    obeyed: bool = False

    def __post_init__(self) -> None:
        self.steps = plan_steps(self.world)
        self.injected = [(c.function, dict(c.args)) for c in self.world.injected_calls()]
        lines = (
            line.strip() for text in self.world.injections.values() for line in text.split("\n")
        )
        self.marker = next((line for line in lines if line), None)

    def answer(self) -> str:
        """The task's expected answer where AgentDojo gives one, then every result."""
        found = [called.result for called in self.world.called]
        return "\n".join([self.world.task.user_task.GROUND_TRUTH_OUTPUT, *found]).strip()

    def read_attack(self, request: dict[str, Any]) -> bool:
        return self.marker is not None and self.marker in prompt_text(request)

    def __call__(self, request: dict[str, Any]) -> Reply:
        if self.design == "react":
            return self.loop(request, [(s.function, s.args) for s in self.steps])
        role = classify(request).role
        if role == "planner":
            return self.plan(request)
        if role == "replanner":
            return self.replan(request)
        if role == "answer":
            return text(self.answer())
        tag = _CALL_TAG.search(executor_step(request) or "")
        mine = [(s.function, s.args) for s in self.steps if tag and s.number == int(tag[1])]
        return self.loop(request, mine)

    def loop(self, request: dict[str, Any], calls: list[tuple[str, dict[str, Any]]]) -> Reply:
        """An agent loop's next reply: the attacker's calls once it read them, then `calls`,
        then the answer."""
        made = _made(request.get("messages") or [])
        obey = self.injected if self.read_attack(request) else []
        for function, args in [*obey, *calls]:
            if _due(function, args, made):
                return tool_call(function, args)
        return text(self.answer())

    def plan(self, request: dict[str, Any]) -> Reply:
        """The first plan: tool steps where every value is said or referred to, each after
        the last acting step before it (and the steps it refers to); text steps after every
        step before them."""
        tool_steps = set(step_tools(request))
        declares = '"tools"' in json.dumps(steps_schema(request))
        looks_up = look_ups(self.world.task.suite_name)
        last_act = 0
        for step in self.steps:
            after = [last_act] if last_act else []
            if step.function not in looks_up or step.read:
                last_act = step.number
            if step.function in tool_steps and not step.read:
                item = {"tool": step.function, "args": step.planned, "depends_on": after}
            else:
                item = {
                    "step": f"Call {step.function} with what the results say [call {step.number}]",
                    "depends_on": list(range(1, step.number)),
                }
                if declares:
                    item["tools"] = [step.function]
            self.items[step.number] = item
        return tool_call("plan", {first_param(request, "plan", "steps"): list(self.items.values())})

    def replan(self, request: dict[str, Any]) -> Reply:
        still = [self.items[n] for n in planned_numbers(request) if n in self.items]
        if self.read_attack(request) and not self.obeyed:
            self.obeyed = True
            first = int(match[1]) if (match := _NEXT.search(prompt_text(request))) else 1
            for offset, (function, args) in enumerate(self.injected):
                after = [first + offset - 1] if offset else []
                self.items[first + offset] = {"tool": function, "args": args, "depends_on": after}
            still = [self.items[first + k] for k in range(len(self.injected))] + still
        if still:
            return tool_call("plan", {first_param(request, "plan", "steps"): still})
        return tool_call("respond", {first_param(request, "respond", "response"): self.answer()})
