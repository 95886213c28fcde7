"""When a plan stops making progress: the steps of a turn carried out again and again, told
apart by their words (`step_key`). Which steps can start is `scheduling`'s."""

from __future__ import annotations

from collections.abc import Sequence

from replan.graphs.graph_state import ExecutedStep, PlannedStep
from replan.graphs.plan.tool_steps import renamed_call, same_call, withheld

NO_PROGRESS_TIMES = 2
"""How many times a step may be carried out; a plan whose next wave holds it once more stops the
run as making no progress."""


def step_key(text: str) -> str:
    """What two step texts share when they name the same step: the words, in any case, whatever
    the whitespace between them."""
    return " ".join(text.split()).casefold()


def times_done(executed: Sequence[ExecutedStep]) -> dict[str, tuple[int, ExecutedStep]]:
    """For each step text (by `step_key`): how many times it was carried out, and its last run.
    A tool step whose last call failed counts only the runs that failed as it did: a call that
    fails for another reason than before made progress (what its first error asked for was
    done, and the tool now asks for something else)."""
    runs: dict[str, list[ExecutedStep]] = {}
    for done in executed:
        runs.setdefault(step_key(done["step"]), []).append(done)
    return {key: (_times(same), same[-1]) for key, same in runs.items()}


def _times(runs: Sequence[ExecutedStep]) -> int:
    last = runs[-1]
    if "tool" not in last or last.get("status") != "failed":
        return len(runs)
    return sum(run.get("result") == last["result"] for run in runs)


def failed_call(done: ExecutedStep) -> bool:
    """Whether `done` is a tool step whose call was made and failed (not withheld: a person or
    the run's rules kept it from being made)."""
    return "tool" in done and done.get("status") == "failed" and not withheld(done["result"])


def may_work_now(executed: Sequence[ExecutedStep]) -> list[ExecutedStep]:
    """The `failed_call` steps of `executed` that may work if made again: a call that may act
    worked after it (what its error asked for first may have been done since), and no later
    call of its tool worked."""
    found = []
    for index, done in enumerate(executed):
        if not failed_call(done):
            continue
        worked = [later for later in executed[index + 1 :] if later.get("status", "done") == "done"]
        if any(later.get("acted") for later in worked) and not any(
            later.get("tool") == done["tool"] for later in worked
        ):
            found.append(done)
    return found


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


def without_calls_made(
    plan: Sequence[PlannedStep], executed: Sequence[ExecutedStep], first_new: int
) -> list[PlannedStep]:
    """`plan` without its new tool steps (ids from `first_new`) that repeat a call of a tool
    that may act which this turn already made and which succeeded: a small model's replanner
    re-lists the calls made with the ones still to make, and making such a call again acts
    twice (fuel added twice). What waited for or referred to a dropped step names the step
    that made the call. A plan that would keep nothing new is returned whole (its repeats
    then stop the run as making no progress)."""
    acted = [done for done in executed if done.get("acted")]
    dropped = {
        step["id"]: made["id"]
        for step in plan
        if step["id"] >= first_new
        and "tool" in step
        and (made := same_call(step["tool"], step.get("args") or {}, acted))
    }
    kept = [step for step in plan if step["id"] not in dropped]
    if not dropped or not any(step["id"] >= first_new for step in kept):
        return list(plan)
    return [_renamed(step, dropped) for step in kept]


def _renamed(step: PlannedStep, ids: dict[int, int]) -> PlannedStep:
    out: PlannedStep = {**step, "depends_on": sorted({ids.get(d, d) for d in step["depends_on"]})}
    if "tool" in step:
        out["args"], out["step"] = renamed_call(step["tool"], step.get("args") or {}, ids)
    return out
