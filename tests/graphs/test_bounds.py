"""Bounds set per run through `Context` win over the graph's build defaults, in both directions,
and no legal bound is cut short by LangGraph's recursion limit."""

from __future__ import annotations

from typing import Any

import pytest

from replan.graphs.context import MAX_BOUND, Context
from replan.graphs.plan_execute import build_plan_execute_graph
from tests.support.fake_models import (
    FakeChatModel,
    Mode,
    both_modes,
    call,
    plan,
    respond,
    run,
    text,
)


def _endless(rounds: int) -> FakeChatModel:
    """A model that replans one more step for `rounds` rounds (and would go on)."""
    return FakeChatModel(
        planner=[plan("keep going")],
        executor=[text("a bit done")] * rounds,
        replanner=[plan(f"keep going, part {i}") for i in range(2, rounds + 2)],
    )


@both_modes
def test_a_smaller_max_iterations_for_the_run_stops_it_earlier(mode: Mode) -> None:
    model = _endless(5)
    graph = build_plan_execute_graph(model, max_iterations=5, task_tools="compact")
    result = run(graph, "Go on", mode, context=Context(max_iterations=2))

    assert len(result["executed_steps"]) == 2
    assert result["stop_reason"] == "max_iterations" and "2" in result["response"]


def _bound(name: str, value: int, given: str) -> tuple[dict[str, int], Context | None]:
    """Build arguments and run context giving bound `name` the `value`, as `given` says."""
    if given == "build":
        return {name: value}, None
    return {name: 1}, Context(**{name: value})


@both_modes
@pytest.mark.parametrize("given", ["build", "context"])
def test_many_rounds_are_not_cut_by_the_recursion_limit(given: str, mode: Mode) -> None:
    rounds = 30  # 2 super-steps a round: beyond LangGraph's default limit of 25
    model = _endless(rounds)
    build, context = _bound("max_iterations", rounds, given)
    result = run(
        build_plan_execute_graph(model, **build, task_tools="compact"),
        "Go on",
        mode,
        context=context,
    )

    assert len(result["executed_steps"]) == rounds
    assert result["stop_reason"] == "max_iterations"


@pytest.mark.parametrize("given", ["build", "context"])
def test_a_long_step_is_not_cut_by_the_recursion_limit(given: str) -> None:
    turns = 15  # 15 model turns and 14 tool runs in the executor's loop
    model = FakeChatModel(
        planner=[plan("list the tasks many times")],
        executor=[*[call("TaskList")] * (turns - 1), text("listed them all")],
        replanner=[respond("ok")],
    )
    build, context = _bound("executor_max_steps", turns, given)
    result = run(
        build_plan_execute_graph(model, **build, task_tools="compact"),
        "Loop a while",
        context=context,
    )

    assert len(model.requests_of("executor")) == turns
    assert result["executed_steps"][0]["result"] == "listed them all"


def test_executor_max_steps_for_the_run_cuts_a_step_shorter() -> None:
    model = FakeChatModel(
        planner=[plan("list the tasks forever")],
        executor=[call("TaskList")] * 3,
        replanner=[respond("stopped")],
    )
    graph = build_plan_execute_graph(model, executor_max_steps=10, task_tools="compact")
    result = run(graph, "Loop", context=Context(executor_max_steps=3))

    assert len(model.requests_of("executor")) == 3
    assert result["executed_steps"][0]["result"].startswith("UNFINISHED")
    assert "3 model calls" in result["executed_steps"][0]["result"]


@pytest.mark.parametrize(("retries", "mistakes", "succeeds"), [(0, 1, False), (4, 4, True)])
def test_mistake_retries_for_the_run(retries: int, mistakes: int, succeeds: bool) -> None:
    model = FakeChatModel(
        planner=[*[plan()] * mistakes, plan("the step")],  # no steps: not a plan
        executor=[text("done")],
        replanner=[respond("ok")],
    )
    graph = build_plan_execute_graph(model, mistake_retries=2, task_tools="compact")
    context = Context(mistake_retries=retries)
    result = run(graph, "Objective", context=context)
    assert (result["response"] == "ok") == succeeds
    assert (result["stop_reason"] == "no_decision") != succeeds
    assert len(model.requests_of("planner")) == min(retries, mistakes) + 1


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_iterations", 0),
        ("max_iterations", MAX_BOUND + 1),
        ("executor_max_steps", True),
        ("executor_max_steps", 2.5),
        ("mistake_retries", -1),
    ],
)
def test_a_bound_no_run_could_use_is_refused_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        Context(**{field: value})
