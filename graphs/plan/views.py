"""What the prompts show of a run: plans and results as numbered text, and the briefings of the
replanner and of one step's executor. `plan_items` turns a stored plan back into the form a
model or a reviewer writes (see `replan.graphs.graph_state`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from replan.graphs.conversation import earlier_exchanges, turn_objective
from replan.graphs.graph_state import ExecutedStep, PlanExecuteState, PlanItem, PlannedStep, StepRun
from replan.graphs.plan.progress import failed_call, may_work_now, times_done
from replan.graphs.plan.references import references, renumber
from replan.graphs.plan.scheduling import last_wave, steps_left
from replan.graphs.plan.tool_steps import first_line, format_call
from replan.state.task_views import format_task_list
from replan.state.tasks import TaskContext
from replan.tools.task_state import as_task_context

REPLANNER_RESULT_CHARS = 600
"""How much of each result the replanner's prompt shows (the state keeps all of it)."""


def plan_items(plan: Sequence[PlannedStep], first: int = 1) -> list[PlanItem]:
    """`plan` as a person writes it at review, its steps numbered on from `first` by position
    (1 for a first plan; a follow-up turn's plan may also name the steps of the turn before,
    which keep their numbers): a string for a step that waits only for the one before it, else
    `{"step", "depends_on": [numbers]}` (with `tools` when the step names them); a tool step as
    `{"tool", "args", "depends_on"}`, its references `$N` numbered the same way (a deferred
    step without `args`)."""
    where = {step["id"]: number for number, step in enumerate(plan, first)}
    items: list[PlanItem] = []
    for number, step in enumerate(plan, first):
        named = [d for d in step["depends_on"] if d in where or first > 1]  # done: by number
        depends_on = sorted(where.get(d, d) for d in named)
        if "tool" in step:
            args = renumber(step.get("args") or {}, where)
            referred = references(args)
            item: dict[str, Any] = {"tool": step["tool"], "args": args}
            if extra := [n for n in depends_on if n not in referred]:
                item["depends_on"] = extra
            items.append(item)
        elif "deferred" in step:  # its args left out: written once its dependencies are done
            items.append({"tool": step["deferred"], "depends_on": depends_on})
        elif "tools" in step:  # a sealed run's text step, with the tools it may act with
            items.append({"step": step["step"], "depends_on": depends_on, "tools": step["tools"]})
        elif depends_on == ([number - 1] if number > first else []):
            items.append(step["step"])
        else:
            items.append({"step": step["step"], "depends_on": depends_on})
    return items


def _numbers(numbers: Sequence[int]) -> str:
    return ", ".join(map(str, numbers)) or "nothing"


def _is_chain(plan: Sequence[PlannedStep]) -> bool:
    """Whether each step waits for exactly the step listed before it (the first for nothing)."""
    before = [[], *([step["id"]] for step in plan)]
    return all(step["depends_on"] == after for step, after in zip(plan, before, strict=False))


def format_plan(plan: Sequence[PlannedStep] | Sequence[PlanItem]) -> str:
    """A list of steps, or "(none)": a stored plan by its steps' numbers (ids), items as a model
    writes them by position. When some step waits for more or less than the one listed before
    it, every line says what it waits for."""
    items: list[Any] = list(plan)
    if items and all(isinstance(item, dict) and "id" in item for item in items):
        if _is_chain(items):
            return "\n".join(f"{step['id']}. {step['step']}" for step in items)
        return "\n".join(
            f"{step['id']}. {step['step']} [after: {_numbers(step['depends_on'])}]"
            for step in items
        )
    if all(isinstance(item, str) for item in items):
        return (
            "\n".join(f"{position}. {item}" for position, item in enumerate(items, 1)) or "(none)"
        )
    lines = []
    for position, item in enumerate(items, 1):
        if isinstance(item, str):
            text, after = item, [position - 1] if position > 1 else []
        elif "tool" in item:
            text = format_call(item["tool"], item.get("args") or {})
            after = sorted({*(item.get("depends_on") or []), *references(item.get("args") or {})})
        else:
            text, after = item.get("step", ""), item.get("depends_on") or []
        lines.append(f"{position}. {text} [after: {_numbers(after)}]")
    return "\n".join(lines) or "(none)"


def _shorten(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()}… [{len(text) - limit} more characters not shown]"


def format_executed_steps(
    steps: Sequence[ExecutedStep], *, limit: int | None = None, empty: str = "(none yet)"
) -> str:
    """Each executed step by its number, with its result, or `empty`; a tool step as its call
    and result (`area(room="A") → 12.5`). `limit` shortens long results to their first `limit`
    characters."""
    blocks = []
    for position, done in enumerate(steps, 1):
        number = done.get("id", position)
        result = _shorten(done["result"], limit)
        if "tool" in done:
            call = format_call(done["tool"], done.get("args") or {})
            failed = " [failed]" if done.get("status", "done") == "failed" else ""
            blocks.append(f"{number}. {call} → {result}{failed}")
        else:
            blocks.append(f"{number}. {done['step']}\n   Result: {result}")
    return "\n".join(blocks) or empty


def format_repeated_steps(executed: Sequence[ExecutedStep], template: str) -> str:
    """`template` listing the steps carried out more than once, each with its last result
    (shortened), or "" when there are none."""
    lines = [
        f"- {last['step']} (carried out {times} times)\n"
        f"   Last result: {_shorten(last['result'], REPLANNER_RESULT_CHARS)}"
        for times, last in times_done(executed).values()
        if times > 1
    ]
    return template.format(steps="\n".join(lines)) if lines else ""


def replanner_briefing(
    state: PlanExecuteState, repeated_template: str, earlier_template: str
) -> dict[str, str]:
    """The progress of the turn so far, as the replanner's prompt placeholders name it: the
    objective (followed by the conversation before it, `earlier_template`, on a follow-up),
    every result, long ones shortened, so the prompt grows linearly with the steps done, and the
    steps carried out more than once (`repeated_template`, left out when there are none)."""
    executed = state.get("executed_steps", [])
    exchanges = earlier_exchanges(state["messages"])
    earlier = earlier_template.format(exchanges=exchanges) if exchanges else ""
    return {
        "objective": turn_objective(state) + earlier,
        "plan": format_plan(steps_left(state)),
        "executed_steps": format_executed_steps(executed, limit=REPLANNER_RESULT_CHARS),
        "tasks": task_section(state.get("tasks_context") or TaskContext()),
        "repeated": format_repeated_steps(executed, repeated_template),
    }


TASK_LIST_HEADING = "\n\n# Task list\n"
"""How the task list section of a briefing starts (it follows the section before it)."""


def task_section(tasks: TaskContext, *, offered: bool = False) -> str:
    """The task list as a briefing's section: shown when it holds tasks, or, empty, when the
    task tools are `offered` (saying how to make some); "" otherwise."""
    if not tasks.tasks and not offered:
        return ""
    return TASK_LIST_HEADING + format_task_list(tasks)


def executor_briefing(run: StepRun, task_tools: bool) -> dict[str, str]:
    """What one step's executor is shown: the objective, its step, the results of the steps
    it depends on, and the task list (when it has tasks, or the step has the `task_tools`)."""
    return {
        "objective": run["objective"],
        "step": run["step"]["step"],
        "dependencies": format_executed_steps(run["dependencies"], empty="(none)"),
        "tasks": task_section(as_task_context(run["tasks_context"]), offered=task_tools),
    }


def calls_short(state: PlanExecuteState) -> list[str]:
    """The calls a response would now leave short, one line each: the tool steps that failed,
    with their result: those of the last wave (not those withheld: a person or the run's rules
    kept them from being made) and earlier ones that may work now (`may_work_now`); then the
    tool steps and deferred steps still planned; none when every call worked and none is
    left."""
    wave = [done for done in last_wave(state) if failed_call(done)]
    earlier = [done for done in may_work_now(state.get("executed_steps", [])) if done not in wave]
    failed = [
        f"{done['id']}. {done['step']} failed: {first_line(done['result'])}"
        for done in [*earlier, *wave]
    ]
    unmade = [
        f"{step['id']}. {step['step']} (not made)"
        for step in steps_left(state)
        if "tool" in step or "deferred" in step
    ]
    return failed + unmade
