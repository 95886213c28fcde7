"""Plans with dependencies, with an in-process fake model: the `plan` schema and its mistakes,
stable step ids across replans, when the replanner is asked, and plan review."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import ValidationError

from replan.graphs.context import Context
from replan.graphs.graph_state import reviewed_steps
from replan.graphs.plan.decisions import PlanArgs, accept_plan, plan_tool
from replan.graphs.plan.numbering import Numbering
from replan.graphs.plan.views import REPLANNER_RESULT_CHARS, format_plan, plan_items
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.graphs.prompts import DEFAULT_PROMPTS
from tests.support.fake_models import (
    ANSWER_CALLS,
    FakeChatModel,
    Mode,
    Request,
    both_modes,
    call,
    plan,
    respond,
    run,
    text,
)

WHEN_NEEDED = Context(replan="when_needed")


def plan_with(*steps: str | dict[str, Any]) -> AIMessage:
    """A `plan` decision whose steps may carry dependencies."""
    return call("plan", steps=list(steps))


def step(text: str, *depends_on: int) -> dict[str, Any]:
    return {"step": text, "depends_on": list(depends_on)}


def report(request: Request) -> AIMessage:
    """An executor that reports on the step it was given."""
    return text("did " + request.prompt.rsplit("# Your step\n", 1)[-1])


def executor_prompt(model: FakeChatModel, step_text: str) -> str:
    (request,) = [r for r in model.requests_of("executor") if r.prompt.endswith(step_text)]
    return request.prompt


def test_a_plan_takes_strings_objects_and_objects_written_as_json() -> None:
    args = PlanArgs(
        steps=["a", step("b"), {"step": "c", "depends_on": [2, 1, 2]}, '{"step": "d"}', " e "]
    )
    planned = [(s["step"], s["depends_on"]) for s in accept_plan(args)]
    assert planned == [("a", []), ("b", []), ("c", [1, 2]), ("d", [3]), ("e", [4])]


@pytest.mark.parametrize(
    ("steps", "problem"),
    [
        ([step("a"), step("b", 3)], "step 2 depends on step 3, but the list has steps 1 to 2"),
        ([step("a", 1)], "step 1 depends on itself"),
        ([step("a", 2), step("b")], "step 1 depends on step 2, which comes after it"),
        (["a", step("  ")], "step 2 is blank"),
    ],
)
def test_invalid_dependencies_are_refused_saying_why(steps: list[Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        PlanArgs(steps=steps)


def test_the_plan_tool_schema_is_self_contained() -> None:
    spec = plan_tool(DEFAULT_PROMPTS).spec()["function"]["parameters"]
    assert "$defs" not in spec and "$ref" not in str(spec)
    item = spec["properties"]["steps"]["items"]
    assert {"string", "object"} == {option["type"] for option in item["anyOf"]}


@both_modes
def test_invalid_dependencies_are_corrected_then_the_plan_runs(mode: Mode) -> None:
    model = FakeChatModel(
        planner=[plan_with(step("a", 2), step("b")), plan_with(step("a"), step("b", 1))],
        executor=[report, report],
        replanner=[respond("ok")],
    )
    result = run(
        build_plan_execute_graph(model, task_tools="compact"),
        "Objective",
        mode,
        context=WHEN_NEEDED,
    )

    assert result["response"] == "ok"
    second = model.requests_of("planner")[1].prompt
    assert "step 1 depends on step 2, which comes after it" in second
    assert [done["step"] for done in result["executed_steps"]] == ["a", "b"]


def test_dependencies_still_invalid_after_the_retries_end_the_turn_not_started() -> None:
    model = FakeChatModel(planner=[plan_with(step("a", 1))] * 2)
    result = run(
        build_plan_execute_graph(model, mistake_retries=1, task_tools="compact"), "Objective"
    )
    assert result["stop_reason"] == "no_decision"
    assert "step 1 depends on itself" in result["response"]


def test_a_replanned_step_keeps_its_id_and_the_results_it_was_planned_to_use() -> None:
    first = accept_plan(PlanArgs(steps=[step("fetch a"), step("fetch b"), step("merge", 1, 2)]))
    assert [(s["id"], s["depends_on"]) for s in first] == [(1, []), (2, []), (3, [1, 2])]
    done = [
        {"id": 1, "step": "fetch a", "result": "A"},
        {"id": 2, "step": "fetch b", "result": "B"},
    ]
    numbering = Numbering.replan(first[2:], done)
    assert numbering.first == 4  # new steps continue the count
    again = accept_plan(PlanArgs(steps=["check", "merge"]), numbering)
    assert again == [
        {"id": 4, "step": "check", "depends_on": []},
        {"id": 3, "step": "merge", "depends_on": [1, 2, 4]},
    ]
    assert plan_items(again) == ["check", "merge"]
    assert format_plan(again) == "4. check [after: nothing]\n3. merge [after: 1, 2, 4]"


def test_a_plan_is_shown_with_what_each_step_waits_for() -> None:
    planned = accept_plan(PlanArgs(steps=[step("a"), step("b"), step("c", 1, 2), "d"]))
    assert plan_items(planned) == ["a", step("b"), step("c", 1, 2), "d"]
    assert format_plan(planned) == (
        "1. a [after: nothing]\n2. b [after: nothing]\n3. c [after: 1, 2]\n4. d [after: 3]"
    )


@both_modes
def test_each_wave_replans_after_every_wave_and_kept_steps_see_their_inputs(mode: Mode) -> None:
    model = FakeChatModel(
        planner=[plan_with(step("fetch a"), step("fetch b"), step("merge", 1, 2))],
        executor=[report] * 4,
        replanner=[plan_with("tidy up", step("merge")), respond("merged")],
    )
    result = run(build_plan_execute_graph(model, task_tools="compact"), "Merge a and b", mode)

    assert result["response"] == "merged"
    assert [d["step"] for d in result["executed_steps"]] == [
        "fetch a",
        "fetch b",
        "tidy up",
        "merge",
    ]
    merge = executor_prompt(model, "merge")
    assert "did fetch a" in merge and "did fetch b" in merge
    assert "did tidy up" not in merge  # its new position says it waits for nothing
    assert "did fetch" not in executor_prompt(model, "tidy up")  # a new step sees no old results
    assert len(model.requests_of("replanner")) == 2


@both_modes
def test_when_needed_the_replanner_runs_only_at_the_end(mode: Mode) -> None:
    model = FakeChatModel(
        planner=[plan("one", "two", "three")],
        executor=[report] * 3,
        replanner=[respond("all done")],
    )
    result = run(
        build_plan_execute_graph(model, task_tools="compact"), "Count", mode, context=WHEN_NEEDED
    )

    assert result["response"] == "all done"
    assert len(model.requests) == 3 + 2 + ANSWER_CALLS
    assert "did one" in executor_prompt(model, "two")
    assert "did one" not in executor_prompt(model, "three")  # only the step it depends on


@pytest.mark.parametrize(
    ("outcome", "status"),
    [(text("FAILED: the source is offline"), "failed"), (call("TaskList"), "unfinished")],
)
def test_when_needed_a_failed_or_unfinished_step_brings_the_replanner_in(
    outcome: AIMessage, status: str
) -> None:
    model = FakeChatModel(
        planner=[plan("fetch", "use it")],
        executor=[outcome, report],
        replanner=[plan("fetch elsewhere"), respond("recovered")],
    )
    graph = build_plan_execute_graph(model, executor_max_steps=1, task_tools="compact")
    result = run(graph, "Get it", context=WHEN_NEEDED)

    assert result["response"] == "recovered"
    assert result["executed_steps"][0]["status"] == status
    assert [d["step"] for d in result["executed_steps"]] == ["fetch", "fetch elsewhere"]
    assert len(model.requests_of("replanner")) == 2


def test_when_needed_each_wave_still_counts_against_max_iterations() -> None:
    model = FakeChatModel(
        planner=[plan("one", "two", "three")],
        executor=[report] * 2,
        replanner=[plan("three")],
    )
    result = run(
        build_plan_execute_graph(model, max_iterations=2, task_tools="compact"),
        "Count",
        context=WHEN_NEEDED,
    )

    assert result["stop_reason"] == "max_iterations"
    assert [d["step"] for d in result["executed_steps"]] == ["one", "two"]
    assert len(model.requests_of("replanner")) == 1  # asked once, in the last allowed round
    assert "not finished" in result["response"]


def test_the_replanner_sees_long_results_shortened_and_the_state_keeps_them_whole() -> None:
    long = "x" * (REPLANNER_RESULT_CHARS * 3)
    model = FakeChatModel(
        planner=[plan("read the book")], executor=[text(long)], replanner=[respond("ok")]
    )
    result = run(build_plan_execute_graph(model, task_tools="compact"), "Summarise")

    assert result["executed_steps"][0]["result"] == long
    prompt = model.requests_of("replanner")[0].prompt
    assert "x" * REPLANNER_RESULT_CHARS in prompt and long not in prompt
    assert f"{REPLANNER_RESULT_CHARS * 2} more characters not shown" in prompt


# --- plan review ---------------------------------------------------------------------------

CONFIG: RunnableConfig = {"configurable": {"thread_id": "review-dependencies"}}


@both_modes
@pytest.mark.parametrize(
    "edit",
    [
        [step("check x"), step("check y"), step("decide", 1, 2)],
        {
            "action": "edit",
            "steps": ["check x", step("check y"), '{"step": "decide", "depends_on": [1, 2]}'],
        },
    ],
    ids=["objects", "json-strings"],
)
def test_review_shows_and_accepts_dependencies(edit: Any, mode: Mode) -> None:
    model = FakeChatModel(
        planner=[plan_with(step("look"), step("leap", 1), step("land"))],
        executor=[report] * 3,
        replanner=[respond("decided")],
    )
    graph = build_plan_execute_graph(model, checkpointer=InMemorySaver(), task_tools="compact")
    context = Context(approve_plan=True, replan="when_needed")
    paused = run(graph, "Decide", mode, config=CONFIG, context=context)

    (pending,) = paused["__interrupt__"]
    assert reviewed_steps(pending.value) == ["look", "leap", step("land")]
    result = run(graph, Command(resume=edit), mode, config=CONFIG, context=context)

    assert result["response"] == "decided"
    assert [d["step"] for d in result["executed_steps"]] == ["check x", "check y", "decide"]
    decide = executor_prompt(model, "decide")
    assert "did check x" in decide and "did check y" in decide
    assert len(model.requests_of("replanner")) == 1  # x and y ran in one wave
