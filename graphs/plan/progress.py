"""When a plan stops making progress: the steps of a turn carried out again and again, told
apart by their words (`step_key`). Which steps can start is `scheduling`'s."""

from __future__ import annotations

from collections.abc import Sequence

from replan.graphs.graph_state import ExecutedStep, PlannedStep

NO_PROGRESS_TIMES = 2
"""How many times a step may be carried out; a plan whose next wave holds it once more stops the
run as making no progress."""


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
