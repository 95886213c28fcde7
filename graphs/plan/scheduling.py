"""Which planned steps run next: the steps left, those whose dependencies are done, and the
`Send` fan-out of one wave of them to the executor (`wave`); what the last wave was."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from langgraph.types import Send

from replan.graphs.context import (
    Context,
)
from replan.graphs.conversation import turn_objective, user_texts
from replan.graphs.graph_state import (
    EXECUTOR,
    ExecutedStep,
    PlanExecuteState,
    PlannedStep,
    StepRun,
    effective_mode,
)
from replan.graphs.plan.provenance import known_words
from replan.graphs.plan.references import references
from replan.graphs.plan.todos import Todo, plan_todos, step_done
from replan.graphs.plan.tool_steps import call_key
from replan.graphs.seal import step_seal
from replan.state.tasks import TaskContext


def _first_of_each_call(
    steps: Sequence[PlannedStep], results: dict[int, ExecutedStep]
) -> list[PlannedStep]:
    """`steps` without a tool step that makes the same call as an earlier one of them (same tool,
    same arguments, same results referred to): it waits a wave, then takes that one's result."""
    seen: set[str] = set()
    kept = []
    for step in steps:
        if "tool" in step:
            args = step.get("args") or {}
            inputs = {n: results[n]["result"] for n in references(args) if n in results}
            key = call_key(step["tool"], {"args": args, "inputs": inputs})
            if key in seen:
                continue
            seen.add(key)
        kept.append(step)
    return kept


def wave(state: PlanExecuteState, context: Context) -> list[Send]:
    """An `executor` task for each planned step whose dependencies are done, in plan order, at
    most `context.max_concurrency` of them (the others wait for the next wave); a tool step
    making the same call as another of the wave waits for the next one."""
    executed = state.get("executed_steps", [])
    known = [*state.get("carried_steps", []), *executed]
    results = _by_id(known)
    objective = turn_objective(state)
    tasks = state.get("tasks_context") or TaskContext()
    calls = fresh_calls(executed)
    ready = _ready(state, context, results)
    said = user_texts(state.get("messages") or [])
    texts = [*said, *(done["result"] for done in known)]
    words = known_words(texts) if any("tool" not in step for step in ready) else ""

    def branch(step: PlannedStep) -> Send:
        inputs = [results[d] for d in step["depends_on"] if d in results]
        run: StepRun = {
            "objective": objective,
            "step": step,
            "dependencies": inputs,
            "tasks_context": tasks,
            "settings": context.settings(),
        }
        if "tool" in step:
            run["after"] = len(executed)
            if calls:
                run["earlier_calls"] = calls
        else:
            run["known"] = words
        if record := state.get("decision_mode"):
            run["decision_mode"] = effective_mode(context.decision_mode, record)
        if context.plan_integrity == "sealed":
            run["seal"] = step_seal(state, step, bool(inputs), said)
        return Send(EXECUTOR, run)

    return [branch(step) for step in ready]


def ready_steps(state: PlanExecuteState, context: Context) -> list[PlannedStep]:
    """The steps the next wave starts (`wave`): those whose dependencies are done, in plan
    order, at most `context.max_concurrency`, one of each same call."""
    known = [*state.get("carried_steps", []), *state.get("executed_steps", [])]
    return _ready(state, context, _by_id(known))


def _by_id(known: Sequence[ExecutedStep]) -> dict[int, ExecutedStep]:
    return {done["id"]: done for done in known if "id" in done}


def _ready(
    state: PlanExecuteState, context: Context, results: dict[int, ExecutedStep]
) -> list[PlannedStep]:
    ready = _first_of_each_call(runnable_steps(steps_left(state)), results)
    return ready[: context.max_concurrency]


def running_todos(state: PlanExecuteState, context: Context) -> list[Todo]:
    """The turn's to-do list as its next wave starts (`turn_todos` with `ready_steps`)."""
    return turn_todos(state, ready_steps(state, context))


def fresh_calls(executed: Sequence[ExecutedStep]) -> list[ExecutedStep]:
    """The calls of read-only tools among the turn's `executed` steps whose results still hold:
    no step that may have acted ran since their wave began (in that wave, too, and counting
    calls made inside executor steps)."""
    acted = [i for i, done in enumerate(executed) if done.get("acted")]
    return [
        done
        for done in executed
        if done.get("read_only") and not any(i >= done.get("after", 0) for i in acted)
    ]


def runnable_steps(plan: Sequence[PlannedStep]) -> list[PlannedStep]:
    """The steps of `plan` whose dependencies are all done (none of them is still planned), but
    deferred steps, which never run as they are (`due_steps`)."""
    return [step for step in _unblocked(plan) if "deferred" not in step]


def due_steps(plan: Sequence[PlannedStep]) -> list[PlannedStep]:
    """The deferred steps of `plan` whose dependencies are all done: the replanner writes them
    now (`replan.graphs.plan.numbering`)."""
    return [step for step in _unblocked(plan) if "deferred" in step]


def _unblocked(plan: Sequence[PlannedStep]) -> list[PlannedStep]:
    waiting = {step["id"] for step in plan}
    return [step for step in plan if waiting.isdisjoint(step["depends_on"])]


def steps_left(state: PlanExecuteState) -> list[PlannedStep]:
    """The planned steps not carried out yet (the last wave's are still in `plan` until the
    replanner runs)."""
    done = {step.get("id") for step in state.get("executed_steps", [])}
    return [step for step in state.get("plan", []) if step["id"] not in done]


def last_wave(state: PlanExecuteState) -> list[ExecutedStep]:
    """The steps of the last wave: the executed steps still in `plan`."""
    planned = {step["id"] for step in state.get("plan", [])}
    return [done for done in state.get("executed_steps", []) if done.get("id") in planned]


def wave_fell_short(state: PlanExecuteState) -> bool:
    """Whether a step of the last wave came back unfinished or failed."""
    return any(done.get("status", "done") != "done" for done in last_wave(state))


def tool_wave(state: PlanExecuteState) -> bool:
    """Whether the last wave held only tool steps (no model call, no judgement to revisit)."""
    wave = last_wave(state)
    return bool(wave) and all("tool" in done for done in wave)


def with_todos(
    state: Mapping[str, Any], update: Any, context: Context, *, reviewed: bool = False
) -> Any:
    """`update` with the turn's to-do list (`replan.graphs.plan.todos`) as it leaves its node:
    an executor branch's step done; after a new plan, the list, with the steps the next wave
    starts in progress (none when the turn has its answer or a person is to review the plan).
    """
    if not isinstance(update, dict):
        return update
    step = state.get("step")
    if isinstance(step, Mapping):  # an executor branch
        done = (update.get("executed_steps") or [{}])[-1]
        return {**update, "todos": step_done(step["step"], done.get("status", "done"))}
    if "plan" not in update:
        return update
    after = cast(PlanExecuteState, {**state, **update})
    if reviewed or after.get("response"):
        return {**update, "todos": turn_todos(after, [])}
    return {**update, "todos": running_todos(after, context)}


def first_todos(state: Mapping[str, Any], update: Any, context: Context) -> Any:
    """`with_todos` after the planner: nothing runs yet when the plan is reviewed first."""
    return with_todos(state, update, context, reviewed=context.approve_plan)


def turn_todos(state: PlanExecuteState, running: Sequence[PlannedStep]) -> list[Todo]:
    """The turn's to-do list: its steps done, then those left, `running` in progress."""
    done = state.get("executed_steps", [])
    executed = [(step["step"], step.get("status", "done")) for step in done]
    planned = [(step["id"], step["step"]) for step in steps_left(state)]
    return plan_todos(executed, planned, {step["id"] for step in running})
