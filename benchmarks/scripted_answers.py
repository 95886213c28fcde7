"""A scripted model that solves every objective of the suite, for the scripted server.

`respond(request)` plays the planner, executor and replanner of replan and of the tutorial
design, recognising the role from the tools the request offers or forces, the objective from
its text and a step from the step's text (the one named last in the prompt). It remembers
nothing between requests: the executor's reports carry a marker ``[objective/step]`` by which
the replanner finds what is done. The tutorial's executor sees no earlier results, so its
replanner copies them into the text of the steps left, as a good model would.
"""

from __future__ import annotations

import re
from typing import Any

from benchmarks.objectives import ERROR, SUITE, Objective, Step
from replan.graphs.prompts import FAILED_PREFIX as FAILED
from replan.testing import Reply, text, tool_call
from replan.testing.plan_script import classify
from replan.testing.requests import first_param, forced_tool, message_text, prompt_text

_REPORT_END = r"""['"][)\],]|; \[|$"""
"""Where a report ends in a prompt: the end of a quoted string (the tutorial shows results in
a Python list), the next report copied into a step, or the end of the line."""


def marker(objective: Objective, key: str) -> str:
    """The tag a step's report carries."""
    return f"[{objective.name}/{key}]"


def _objective(prompt: str) -> Objective | None:
    return next((o for o in SUITE if o.text in prompt), None)


def results_in(objective: Objective, prompt: str) -> dict[str, str]:
    """The reports of the objective's steps found in `prompt`, by step key."""
    found = {}
    for key in objective.script.steps:
        tag = re.escape(marker(objective, key))
        match = re.search(rf"((?:{FAILED} )?){tag} (.*?)(?={_REPORT_END})", prompt, re.MULTILINE)
        if match:
            found[key] = match[1] + match[2]
    return found


def plan_items(objective: Objective, keys: list[str], *, tutorial: str | None = None) -> list[Any]:
    """Steps `keys` as replan's `plan` takes them (with positions of what they need), or, for
    the tutorial, as strings followed by `tutorial` (what is known so far)."""
    steps = objective.script.steps
    if tutorial is not None:
        return [steps[key].text + tutorial for key in keys]
    return [
        {
            "step": steps[key].text,
            "depends_on": [keys.index(need) + 1 for need in steps[key].needs if need in keys],
        }
        for key in keys
    ]


def decide(objective: Objective, prompt: str, *, tutorial: bool) -> list[Any] | str:
    """The replanner's decision: the steps left, or the final answer (the report of the last
    step, in the script's order, that is done)."""
    results = results_in(objective, prompt)
    left = objective.script.remaining(results)
    if left:
        known = f" Known so far: {'; '.join(results.values())}" if tutorial and results else ""
        return plan_items(objective, left, tutorial=known if tutorial else None)
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
    """The executor's next move: the step's next tool call, or its report."""
    prompt = prompt_text(request)
    current = _current_step(prompt)
    if current is None:
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
    if forced == "Plan":
        return tool_call("Plan", {"steps": plan_items(objective, list(first), tutorial="")})
    if forced == "Act":
        decision = decide(objective, prompt, tutorial=True)
        action = {"response": decision} if isinstance(decision, str) else {"steps": decision}
        return tool_call("Act", {"action": action})
    if role == "planner":
        steps = plan_items(objective, list(first))
        return tool_call("plan", {first_param(request, "plan", "steps"): steps})
    decision = decide(objective, prompt, tutorial=False)
    if isinstance(decision, str):
        return tool_call("respond", {first_param(request, "respond", "response"): decision})
    return tool_call("plan", {first_param(request, "plan", "steps"): decision})
