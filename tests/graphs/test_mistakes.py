"""Planner and replanner mistakes: corrected and retried, then a clear error naming the node."""

from __future__ import annotations

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from replan.graphs.plan_execute import build_plan_execute_graph
from tests.support.fake_models import (
    FakeChatModel,
    Mode,
    both_modes,
    call,
    calls,
    malformed,
    plan,
    respond,
    run,
    text,
)

MISTAKES = {
    "no tool call": (text("Here is my plan: first..."), "no tool call"),
    "unexpected tool call": (call("search", query="x"), "unexpected tool call `search`"),
    "unparsable arguments": (malformed("plan", '{"steps": ["a",'), "not valid JSON"),
    "wrong argument type": (call("plan", steps="do it all"), "do not parse"),
    "empty plan": (plan(), "do not parse"),
    "two calls": (calls(("plan", {"steps": ["a"]}), ("respond", {"response": "x"})), "exactly one"),
}


@both_modes
@pytest.mark.parametrize("mistake", MISTAKES)
def test_planner_retries_with_a_correction_then_succeeds(mistake: str, mode: Mode) -> None:
    bad, problem = MISTAKES[mistake]
    model = FakeChatModel(
        planner=[bad, plan("the step")],
        executor=[text("done")],
        replanner=[respond("ok")],
    )
    result = run(build_plan_execute_graph(model, task_tools="compact"), "Objective", mode)

    assert result["response"] == "ok"
    first, second = model.requests_of("planner")
    assert problem in second.prompt and problem not in first.prompt
    assert second.tool_choice == "plan"


@pytest.mark.parametrize("mistake", ["no tool call", "unexpected tool call", "empty plan"])
def test_replanner_retries_with_a_correction_then_succeeds(mistake: str) -> None:
    bad, problem = MISTAKES[mistake]
    model = FakeChatModel(
        planner=[plan("the step")],
        executor=[text("done")],
        replanner=[bad, respond("ok")],
    )
    assert (
        run(build_plan_execute_graph(model, task_tools="compact"), "Objective")["response"] == "ok"
    )
    assert problem in model.requests_of("replanner")[1].prompt


@both_modes
def test_a_planner_past_the_retry_bound_ends_the_turn_not_started_and_the_chat_goes_on(
    mode: Mode,
) -> None:
    model = FakeChatModel(
        planner=[call("plan", steps=["a", {"step": "b", "depends_on": [2]}])] * 3
        + [plan("the step")],
        executor=[text("done")],
        replanner=[respond("ok")],
    )
    graph = build_plan_execute_graph(
        model, mistake_retries=2, checkpointer=InMemorySaver(), task_tools="compact"
    )
    config: RunnableConfig = {"configurable": {"thread_id": "no-plan"}}
    result = run(graph, "Objective", mode, config=config)

    assert len(model.requests_of("planner")) == 3
    assert result["stop_reason"] == "no_decision"
    assert result["response"].startswith("The objective was not started: the model gave no usable")
    assert "step 2 depends on itself" in result["response"]
    assert result["messages"][-1].text == result["response"]
    follow_up = run(graph, "Try again", mode, config=config)
    assert follow_up["response"] == "ok" and follow_up["stop_reason"] == ""


def test_a_replanner_past_the_retry_bound_ends_not_finished_with_the_work_done() -> None:
    """The steps done are kept and reported: the run ends `no_decision`, it does not fail."""
    model = FakeChatModel(
        planner=[plan("the step", "the next step")],
        executor=[text("done")],
        replanner=[malformed("plan", "{not json")] * 2,
    )
    result = run(
        build_plan_execute_graph(model, mistake_retries=1, task_tools="compact"), "Objective"
    )

    assert len(model.requests_of("replanner")) == 2
    assert result["stop_reason"] == "no_decision"
    assert result["response"].startswith(
        "The objective was not finished: the model gave no usable decision on what to do "
        "next (the arguments of `plan` are not valid JSON, still after 2 attempts)."
    )
    assert "1. the step\n   Result: done" in result["response"]
    assert "2. the next step" in result["response"]  # still planned
    assert [step["step"] for step in result["plan"]] == ["the next step"]


def test_replanner_is_offered_plan_and_respond_and_must_pick_one() -> None:
    model = FakeChatModel(planner=[plan("s")], executor=[text("r")], replanner=[respond("ok")])
    run(build_plan_execute_graph(model, task_tools="compact"), "Objective")
    (request,) = model.requests_of("replanner")
    assert request.tools == ["respond", "plan"]  # to respond comes first
    assert request.tool_choice == "any"
