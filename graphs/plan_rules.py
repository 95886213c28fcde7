"""Rules over a run's plan: the objective, which steps can start, which are left, and when a
plan stops making progress. Each round carries out one wave: every planned step whose
dependencies are done, side by side (`runnable_steps`)."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AnyMessage, HumanMessage

from replan.graphs.errors import InvalidInputError
from replan.graphs.schema import ExecutedStep, PlanExecuteInput, PlanExecuteState, PlannedStep

NO_PROGRESS_TIMES = 2
"""How many times a step may be carried out; a plan whose next wave holds it once more stops the
run as making no progress."""


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
