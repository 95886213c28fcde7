"""State schemas of the plan–execute–replan graph, and the views of it that prompts show.

The graph keeps the user's `messages`, the `plan` (steps still to do, each with a stable `id`
and the ids of the steps it waits for), the `executed_steps` with their results, the final
`response`, the shared task list (`tasks_context`), how many execute→replan rounds ran
(`iterations`), once the model server refused a way of asking for decisions, the way used
instead (`decision_mode`), how many tool calls written as text were recovered
(`recovered_calls`) and how many mistaken model replies were corrected (`corrected_mistakes`),
and the tokens the model calls used (`usage`, per node and per plan step, see
`replan.state.usage`). Each round carries out one wave: every planned step whose dependencies
are done, side by side (see `runnable_steps`).

A model (or a reviewer) writes a plan as a list whose items are either a string, which runs
after the item before it, or `{"step": text, "depends_on": [positions]}` with 1-based positions
of earlier items of the same list. `plan_items` turns a stored plan back into that form.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.graph import add_messages
from typing_extensions import TypedDict

from replan.graphs.context import DecisionMode
from replan.graphs.errors import InvalidInputError
from replan.graphs.task_merge import merge_task_updates
from replan.state.task_views import format_task_list
from replan.state.tasks import TaskContext
from replan.state.usage import RunUsage, merge_usage
from replan.tools.task_state import TasksState, as_task_context

REPLANNER_RESULT_CHARS = 600
"""How much of each result the replanner's prompt shows (the state keeps all of it)."""


class PlannedStep(TypedDict):
    """A step still to do: a stable `id` (unique in the thread), its text, and the ids of the
    steps that must be done before it starts."""

    id: int
    step: str
    depends_on: list[int]


StepStatus = Literal["done", "unfinished", "failed"]
"""How a step ended: its executor answered, ran out of model calls, or reported a failure."""


class ExecutedStep(TypedDict):
    """One carried-out step and the executor's report on it."""

    step: str
    result: str
    id: NotRequired[int]
    status: NotRequired[StepStatus]


PlanItem = str | dict[str, Any]
"""A step as a model or a reviewer writes it (see the module docstring)."""


class PlanExecuteInput(TypedDict):
    """What a caller gives the graph: the conversation holding the objective."""

    messages: Annotated[list[AnyMessage], add_messages]


StopReason = Literal["", "max_iterations", "no_progress"]
"""Why a run ended without meeting its objective: its round limit, or a step planned again after
it had been carried out twice (`repeated_step`); "" when it met it (or was rejected at review)."""

NO_PROGRESS_TIMES = 2
"""How many times a step may be carried out; a plan whose next wave holds it once more stops the
run as making no progress."""


class DecisionFallback(TypedDict):
    """A way of asking for decisions the model server refused in this run: `refused` (the
    mode), `asked` (what the request carried that was refused), the HTTP `status`, and the
    mode asked in instead."""

    refused: DecisionMode
    asked: str
    status: int
    fallback: DecisionMode


class DecisionModeRecord(TypedDict):
    """How this run asks for decisions since the server refused a way (`mode`), and each
    refusal; absent while nothing was refused."""

    mode: DecisionMode
    fallbacks: list[DecisionFallback]


def fallbacks_of(record: DecisionModeRecord | None) -> list[DecisionFallback]:
    """The fallbacks `record` holds (none without one)."""
    return list(record["fallbacks"]) if record else []


def effective_mode(requested: DecisionMode, record: DecisionModeRecord | None) -> DecisionMode:
    """The mode a run asks in: `requested`, or the mode it fell back to from it."""
    instead = {fallback["refused"]: fallback["fallback"] for fallback in fallbacks_of(record)}
    mode = requested
    while mode in instead:  # fallbacks only go forward in DECISION_MODES: no cycle
        mode = instead[mode]
    return mode


class PlanExecuteOutput(TypedDict, total=False):
    """What the graph returns: the answer, the steps left, the steps done, `stop_reason`
    when the run ended without meeting the objective, and the model calls' `usage`."""

    response: str
    plan: list[PlannedStep]
    executed_steps: list[ExecutedStep]
    stop_reason: StopReason
    usage: RunUsage


class PlanExecuteState(PlanExecuteInput, total=False):
    """The full state of the plan–execute graph.

    `tasks_context` merges the task-list changes of parallel executor branches
    (`replan.graphs.task_merge`); a plain `TaskContext` written to it replaces the list.
    `usage` adds up what every node reports (parallel steps' usage too).
    """

    plan: list[PlannedStep]
    executed_steps: Annotated[list[ExecutedStep], operator.add]
    response: str
    stop_reason: StopReason
    tasks_context: Annotated[TaskContext, merge_task_updates]
    iterations: int
    recovered_calls: Annotated[int, operator.add]
    """How many tool calls the model wrote as text were recovered, over every node and
    executor branch (`replan.graphs.text_calls`); kept in the state, not in the output."""
    corrected_mistakes: Annotated[int, operator.add]
    """How many model replies were mistakes the model was told about and asked again for: a
    decision without a usable decision in it, an executor turn with a tool call whose arguments
    are not valid JSON or a tool call written as text that could not be read; over every node
    and executor branch, kept in the state, not in the output."""
    decision_mode: DecisionModeRecord
    usage: Annotated[RunUsage, merge_usage]


class StepRun(TypedDict):
    """What one executor branch gets: the objective, its step, the results of the steps it
    depends on, and the task list as the wave started."""

    objective: str
    step: PlannedStep
    dependencies: list[ExecutedStep]
    tasks_context: TaskContext


class ExecutorState(TasksState, total=False):
    """State of the executor's inner tool loop; `model_calls` counts its model turns,
    `corrected_mistakes` the turns answered with a correction, `usage` adds up their tokens."""

    model_calls: int
    corrected_mistakes: Annotated[int, operator.add]
    usage: Annotated[RunUsage, merge_usage]


def objective_text(messages: list[AnyMessage]) -> str:
    """The objective: the text of the user's messages, in order."""
    return "\n\n".join(m.text for m in messages if isinstance(m, HumanMessage))


def require_objective(state: PlanExecuteInput) -> str:
    """The objective of a run; `InvalidInputError` when the user's messages hold no text.

    Checked before any model call: an empty input, no user message, only a system message or
    only whitespace would otherwise make the model plan for nothing.
    """
    objective = objective_text(state.get("messages") or [])
    if not objective.strip():
        raise InvalidInputError(
            "the input has no objective: give at least one user message with text, e.g. "
            '{"messages": [{"role": "user", "content": "Compare three task queues"}]}'
        )
    return objective


def runnable_steps(plan: Sequence[PlannedStep]) -> list[PlannedStep]:
    """The steps of `plan` whose dependencies are all done (none of them is still planned)."""
    waiting = {step["id"] for step in plan}
    return [step for step in plan if waiting.isdisjoint(step["depends_on"])]


def _positions(plan: Sequence[PlannedStep]) -> list[list[int]]:
    """Each step's dependencies as 1-based positions in `plan` (done steps left out)."""
    where = {step["id"]: position for position, step in enumerate(plan, 1)}
    return [sorted(where[d] for d in step["depends_on"] if d in where) for step in plan]


def _after_the_one_before(position: int, depends_on: list[int]) -> bool:
    return depends_on == ([position - 1] if position > 1 else [])


def plan_items(plan: Sequence[PlannedStep]) -> list[PlanItem]:
    """`plan` as a model or reviewer writes it: a string for a step that waits only for the
    one before it, else `{"step", "depends_on": [positions]}`."""
    return [
        step["step"]
        if _after_the_one_before(position, depends_on)
        else {"step": step["step"], "depends_on": depends_on}
        for position, (step, depends_on) in enumerate(zip(plan, _positions(plan), strict=True), 1)
    ]


def format_plan(plan: Sequence[PlannedStep] | Sequence[PlanItem]) -> str:
    """A numbered list of steps (a stored plan, or items as a model writes them), or "(none)".
    When some step waits for more or less than the one before it, every line says what it
    waits for."""
    items: list[Any] = list(plan)
    if any(isinstance(item, dict) and "id" in item for item in items):
        items = plan_items(items)
    if all(isinstance(item, str) for item in items):
        return (
            "\n".join(f"{position}. {item}" for position, item in enumerate(items, 1)) or "(none)"
        )
    lines = []
    for position, item in enumerate(items, 1):
        if isinstance(item, str):
            text, after = item, [position - 1] if position > 1 else []
        else:
            text, after = item.get("step", ""), item.get("depends_on") or []
        lines.append(f"{position}. {text} [after: {', '.join(map(str, after)) or 'nothing'}]")
    return "\n".join(lines) or "(none)"


def _shorten(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()}… [{len(text) - limit} more characters not shown]"


def format_executed_steps(
    steps: Sequence[ExecutedStep], *, limit: int | None = None, empty: str = "(none yet)"
) -> str:
    """Each executed step with its result, numbered, or `empty`; `limit` shortens long
    results to their first `limit` characters."""
    blocks = (
        f"{i}. {done['step']}\n   Result: {_shorten(done['result'], limit)}"
        for i, done in enumerate(steps, 1)
    )
    return "\n".join(blocks) or empty


def steps_left(state: PlanExecuteState) -> list[PlannedStep]:
    """The planned steps not carried out yet (the last wave's are still in `plan` until the
    replanner runs)."""
    done = {step.get("id") for step in state.get("executed_steps", [])}
    return [step for step in state.get("plan", []) if step["id"] not in done]


def step_key(text: str) -> str:
    """What two step texts share when they name the same step: the words, in any case, whatever
    the whitespace between them."""
    return " ".join(text.split()).casefold()


def times_done(executed: Sequence[ExecutedStep]) -> dict[str, tuple[int, ExecutedStep]]:
    """For each step text (by `step_key`): how many times it was carried out, and its last run."""
    counts: dict[str, tuple[int, ExecutedStep]] = {}
    for done in executed:
        key = step_key(done["step"])
        counts[key] = (counts.get(key, (0, done))[0] + 1, done)
    return counts


def repeated_step(
    wave: Sequence[PlannedStep], executed: Sequence[ExecutedStep]
) -> tuple[str, int] | None:
    """The first step of `wave` already carried out `NO_PROGRESS_TIMES` times, with that count."""
    counts = times_done(executed)
    for step in wave:
        times = counts.get(step_key(step["step"]), (0, None))[0]
        if times >= NO_PROGRESS_TIMES:
            return step["step"], times
    return None


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


def replanner_briefing(state: PlanExecuteState, repeated_template: str) -> dict[str, str]:
    """The progress so far, as the replanner's prompt placeholders name it: every result, long
    ones shortened, so the prompt grows linearly with the steps done, and the steps carried out
    more than once (`repeated_template`, left out when there are none)."""
    executed = state.get("executed_steps", [])
    return {
        "objective": objective_text(state["messages"]),
        "plan": format_plan(steps_left(state)),
        "executed_steps": format_executed_steps(executed, limit=REPLANNER_RESULT_CHARS),
        "tasks": format_task_list(state.get("tasks_context") or TaskContext()),
        "repeated": format_repeated_steps(executed, repeated_template),
    }


def executor_briefing(run: StepRun) -> dict[str, str]:
    """What one step's executor is shown: the objective, its step, the results of the steps
    it depends on, and the task list."""
    return {
        "objective": run["objective"],
        "step": run["step"]["step"],
        "dependencies": format_executed_steps(run["dependencies"], empty="(none)"),
        "tasks": format_task_list(as_task_context(run["tasks_context"])),
    }
