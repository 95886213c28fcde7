"""A scripted model that solves every objective of the suite, for the scripted server.

`respond(request)` plays the planner, executor, replanner (and answer) of replan and of the
tutorial design, recognising the role from the tools the request offers or forces, the objective
from its text and a step from the step's text (the one named last in the prompt). It remembers
nothing between requests: the executor's reports carry a marker ``[objective/step]`` by which
the replanner finds what is done. The tutorial's executor sees no earlier results, so its
replanner copies them into the text of the steps left, as a good model would.

When a `plan` request offers tool steps (`replan.graphs.plan.tool_steps`), the model writes each
step that is one call of an offered tool, with arguments it can already tell, as a tool step:
in the first plan the steps that need nothing, in a replan also those whose inputs are now in
the results shown (the tool steps done are found there by their calls). Other steps stay text
steps for the executor, numbered as the prompt says (`replan.graphs.plan.numbering`).
"""

from __future__ import annotations

import re
from typing import Any

from benchmarks.objectives import ERROR, SUITE, Call, Objective, Step
from replan.graphs.plan.tool_steps import format_call
from replan.graphs.prompts.executor import FAILED_PREFIX as FAILED
from replan.testing import Reply, text, tool_call
from replan.testing.plan_script import classify
from replan.testing.requests import (
    first_param,
    forced_tool,
    message_text,
    prompt_text,
    step_tools,
)

_NEW_NUMBERS = re.compile(r"numbered from (\d+)")
"""Where the replanner's prompt says from which number the steps of a new plan count."""

_REPORT_END = r"""['"][)\],]|; \[|$"""
"""Where a report ends in a prompt: the end of a quoted string (the tutorial shows results in
a Python list), the next report copied into a step, or the end of the line."""


def marker(objective: Objective, key: str) -> str:
    """The tag a step's report carries."""
    return f"[{objective.name}/{key}]"


def _objective(prompt: str) -> Objective | None:
    return next((o for o in SUITE if o.text in prompt), None)


def results_in(objective: Objective, prompt: str) -> dict[str, str]:
    """The reports of the objective's steps found in `prompt`, by step key (a tool step's by
    its call, unless its last run failed)."""
    found = {}
    for key, step in objective.script.steps.items():
        tag = re.escape(marker(objective, key))
        match = re.search(rf"((?:{FAILED} )?){tag} (.*?)(?={_REPORT_END})", prompt, re.MULTILINE)
        if match:
            found[key] = match[1] + match[2]
        elif (done := _tool_step_done(step, prompt)) is not None:
            found[key] = done[1]
    return found


def one_call(step: Step, prompt: str, offered: list[str]) -> Call | None:
    """The one tool call that carries `step` out, if it is one call of an offered tool whose
    arguments `prompt` tells, followed by a plain report (so a tool step can do it)."""
    if step.report is not None:
        return None
    try:
        call = step.act(prompt, [])
        then = step.act(prompt, ["(its result)"])
    except (IndexError, KeyError, ValueError):  # the prompt does not hold what it needs yet
        return None
    return call if call is not None and call[0] in offered and then is None else None


def _tool_step_done(step: Step, prompt: str) -> tuple[int, str] | None:
    """The number and result of the last tool step in `prompt` that made `step`'s call, unless
    that call failed."""
    try:
        call = step.act(prompt, [])
    except (IndexError, KeyError, ValueError):
        return None
    if call is None:
        return None
    shown = re.escape(format_call(*call))
    runs = re.findall(rf"^(\d+)\. {shown} → (.*)$", prompt, re.MULTILINE)
    if not runs or runs[-1][1].startswith(ERROR):
        return None
    return int(runs[-1][0]), runs[-1][1]


def tool_step_plan(
    objective: Objective, keys: list[str], prompt: str, offered: list[str], *, first_plan: bool
) -> list[Any]:
    """Steps `keys` as a plan with tool steps: a tool step for each step that is one call of an
    offered tool whose arguments are known (in a first plan, only steps that need nothing),
    a text step for the rest, naming the numbers of the steps of this list it needs."""
    start = 1 if first_plan else first_number(prompt)
    steps = objective.script.steps
    items: list[Any] = []
    for key in keys:
        step = steps[key]
        needs_here = [need for need in step.needs if need in keys]
        call = None if first_plan and step.needs else one_call(step, prompt, offered)
        if call is not None and not needs_here:
            items.append({"tool": call[0], "args": call[1]})
        else:
            waits = [start + keys.index(need) for need in needs_here]
            done = (_tool_step_done(steps[need], prompt) for need in step.needs)
            waits += [found[0] for found in done if found is not None]
            items.append({"step": step.text, "depends_on": sorted(waits)})
    return items


def plan_items(
    objective: Objective, keys: list[str], *, tutorial: str | None = None, start: int = 1
) -> list[Any]:
    """Steps `keys` as replan's `plan` takes them (naming what they need by number: the list's
    steps are numbered from `start`), or, for the tutorial, as strings followed by `tutorial`
    (what is known so far)."""
    steps = objective.script.steps
    if tutorial is not None:
        return [steps[key].text + tutorial for key in keys]
    return [
        {
            "step": steps[key].text,
            "depends_on": [start + keys.index(need) for need in steps[key].needs if need in keys],
        }
        for key in keys
    ]


def first_number(prompt: str) -> int:
    """The number the steps of a new plan count from, as the replanner's prompt says (1 in a
    first plan)."""
    numbered = _NEW_NUMBERS.search(prompt)
    return int(numbered[1]) if numbered else 1


def decide(
    objective: Objective, prompt: str, *, tutorial: bool, offered: list[str] | None = None
) -> list[Any] | str:
    """The replanner's decision: the steps left (with tool steps when `offered` has tools),
    or the final answer (the report of the last step, in the script's order, that is done)."""
    results = results_in(objective, prompt)
    left = objective.script.remaining(results)
    if left and offered:
        return tool_step_plan(objective, left, prompt, offered, first_plan=False)
    if left:
        known = f" Known so far: {'; '.join(results.values())}" if tutorial and results else ""
        if tutorial:
            return plan_items(objective, left, tutorial=known)
        return plan_items(objective, left, start=first_number(prompt))
    final = [key for key in objective.script.steps if key in results]
    return results[final[-1]] if final else "Nothing was done."


def _current_step(prompt: str) -> tuple[Objective, str, Step] | None:
    """The step named last in `prompt` (the executor's own step comes last in both designs)."""
    named = [
        (prompt.rfind(step.text), objective, key, step)
        for objective in SUITE
        for key, step in objective.script.steps.items()
        if step.text in prompt
    ]
    if not named:
        return None
    _, objective, key, step = max(named, key=lambda found: found[0])
    return objective, key, step


def execute(request: dict[str, Any]) -> Reply:
    """The executor's next move: the step's next tool call, or its report (an objective that
    needs no tool: the answer, as the step writing it)."""
    prompt = prompt_text(request)
    current = _current_step(prompt)
    if current is None:
        objective = _objective(prompt)
        if objective is not None and objective.script.answer:
            return text(objective.script.answer)
        return text(f"{FAILED} scripted executor: no step of the suite in the prompt")
    objective, key, step = current
    results = [message_text(m) for m in request.get("messages", []) if m.get("role") == "tool"]
    call = step.act(prompt, results)
    if call is not None:
        return tool_call(*call)
    report = step.report(prompt, results) if step.report else "; ".join(results)
    failed = bool(results) and results[-1].startswith(ERROR)
    body = f"{marker(objective, key)} {' '.join(report.split())}"
    return text(f"{FAILED} {body}" if failed else body)


def respond(request: dict[str, Any]) -> Reply:
    """The scripted model's reply to any request of either design. replan's decisions are
    answered as `plan` / `respond` calls in every decision mode (the scripted server turns them
    into what the request asks for: a `decide` call or a JSON object)."""
    forced = forced_tool(request)
    role = "tutorial" if forced in ("Plan", "Act") else classify(request).role
    if role == "executor":
        return execute(request)
    prompt = prompt_text(request)
    objective = _objective(prompt)
    if objective is None:
        return text("scripted model: no objective of the suite in the prompt")
    first = objective.script.first
    written = objective.script.answer
    if forced == "Plan":  # the tutorial always plans: an objective needing no tool, one step
        steps = plan_items(objective, list(first), tutorial="") if first else [objective.text]
        return tool_call("Plan", {"steps": steps})
    if forced == "Act":
        decision = written or decide(objective, prompt, tutorial=True)
        action = {"response": decision} if isinstance(decision, str) else {"steps": decision}
        return tool_call("Act", {"action": action})
    offered = step_tools(request)
    if role == "answer":  # replan's plain-text answer: what the replanner would respond
        decision = written or decide(objective, prompt, tutorial=False)
        return text(decision if isinstance(decision, str) else "Not all steps are done.")
    if written and role == "replanner":  # the one writing step is done: its text answers
        return tool_call("respond", {first_param(request, "respond", "response"): written})
    if role == "planner":
        steps = (
            [objective.text]  # nothing to carry out with the run's tools: one writing step
            if written
            else tool_step_plan(objective, list(first), prompt, offered, first_plan=True)
            if offered
            else plan_items(objective, list(first))
        )
        return tool_call("plan", {first_param(request, "plan", "steps"): steps})
    decision = decide(objective, prompt, tutorial=False, offered=offered)
    if isinstance(decision, str):
        return tool_call("respond", {first_param(request, "respond", "response"): decision})
    return tool_call("plan", {first_param(request, "plan", "steps"): decision})
