"""The plan–execute–replan loop with an in-process fake model."""

from __future__ import annotations

import dataclasses
import importlib

import pytest
from langchain_core.tools import tool

from replan.graphs import plan_execute
from replan.graphs.context import Context
from replan.graphs.errors import ModelUnavailableError
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.graphs.prompts import DEFAULT_PROMPTS, Prompts
from tests.support.fake_models import (
    ANSWER_CALLS,
    FakeChatModel,
    Mode,
    both_modes,
    call,
    plan,
    respond,
    run,
    stream,
    text,
)


@both_modes
def test_happy_path_plans_executes_each_step_and_responds(mode: Mode) -> None:
    model = FakeChatModel(
        planner=[plan("find the numbers", "add them")],
        executor=[text("found 2 and 3"), text("2 + 3 = 5")],
        replanner=[plan("add them"), respond("The sum is 5.")],
    )
    result = run(build_plan_execute_graph(model, task_tools="compact"), "Add the two numbers", mode)

    usage = result.pop("usage")  # the fake model reports no usage: calls counted, tokens unknown
    calls = {node: (t["calls"], t["no_usage"]) for node, t in usage["nodes"].items()}
    answer = {"answer": (1, 1)} if ANSWER_CALLS else {}
    assert calls == {"planner": (1, 1), "executor": (2, 2), "replanner": (2, 2), **answer}
    assert {key: step["calls"] for key, step in usage["steps"].items()} == {"1": 1, "2": 1}
    question, answer = result.pop("messages")
    assert (question.text, answer.text, answer.name) == (
        "Add the two numbers",
        "The sum is 5.",
        "replan",
    )
    assert result == {
        "response": "The sum is 5.",
        "plan": [],
        "executed_steps": [
            {"id": 1, "step": "find the numbers", "result": "found 2 and 3", "status": "done"},
            {"id": 2, "step": "add them", "result": "2 + 3 = 5", "status": "done"},
        ],
        "stop_reason": "",
        "turns": [],
    }
    first, second = model.requests_of("executor")
    assert "Add the two numbers" in first.prompt and "find the numbers" in first.prompt
    assert "add them" not in first.prompt  # a step sees its own text, not the others'
    assert "found 2 and 3" in second.prompt  # a plain string step builds on the one before
    assert "found 2 and 3" in model.requests_of("replanner")[0].prompt


@both_modes
def test_replan_changes_the_plan(mode: Mode) -> None:
    model = FakeChatModel(
        planner=[plan("try the fast way", "report")],
        executor=[text("the fast way failed"), text("slow way worked"), text("report written")],
        replanner=[
            plan("try the slow way", "report"),
            plan("report"),
            respond("Done the slow way."),
        ],
    )
    result = run(build_plan_execute_graph(model, task_tools="compact"), "Do the thing", mode)

    assert [s["step"] for s in result["executed_steps"]] == [
        "try the fast way",
        "try the slow way",
        "report",
    ]
    assert result["response"] == "Done the slow way."


def test_replanner_may_respond_before_the_plan_is_used_up() -> None:
    model = FakeChatModel(
        planner=[plan("look it up", "double check", "format")],
        executor=[text("it is 42")],
        replanner=[respond("42")],
    )
    result = run(build_plan_execute_graph(model, task_tools="compact"), "What is the answer?")
    assert result["response"] == "42"
    assert [step["step"] for step in result["plan"]] == ["double check", "format"]


@both_modes
def test_max_iterations_ends_with_a_plain_not_finished_response(mode: Mode) -> None:
    model = FakeChatModel(
        planner=[plan("step one")],
        executor=[text("did one"), text("did two")],
        replanner=[plan("step two"), plan("step three")],
    )
    graph = build_plan_execute_graph(model, max_iterations=2, task_tools="compact")
    result = run(graph, "A long job", mode)

    assert len(model.requests_of("executor")) == 2
    assert [step["step"] for step in result["plan"]] == ["step three"]
    assert result["stop_reason"] == "max_iterations"
    response = result["response"]
    assert "not finished" in response and "2" in response
    assert "step one" in response and "did one" in response and "did two" in response
    assert "step three" in response


@both_modes
def test_caller_tools_reach_executor_and_planner(mode: Mode) -> None:
    @tool
    def lookup(query: str) -> str:
        """Look a fact up."""
        return f"fact about {query}"

    model = FakeChatModel(
        planner=[plan("look up cats")],
        executor=[call("lookup", query="cats"), text("cats purr")],
        replanner=[respond("Cats purr.")],
    )
    result = run(
        build_plan_execute_graph(model, [lookup], task_tools="compact"), "Tell me about cats", mode
    )

    assert result["executed_steps"][0]["result"] == "cats purr"
    assert "- lookup(query): Look a fact up" in model.requests_of("planner")[0].prompt
    executor_requests = model.requests_of("executor")
    assert executor_requests[0].tools[0] == "lookup"
    assert "fact about cats" in executor_requests[1].prompt


def test_prompts_are_replaceable() -> None:
    prompts = dataclasses.replace(
        DEFAULT_PROMPTS,
        planner="PLANNER-X with tools:\n{tools}",
        executor="EXECUTOR-X",
        replanner="REPLANNER-X",
        not_finished="GAVE UP after {max_iterations}",
    )
    model = FakeChatModel(planner=[plan("s")], executor=[text("r")], replanner=[plan("t")])
    result = run(
        build_plan_execute_graph(model, prompts=prompts, max_iterations=1, task_tools="compact"),
        "Go",
    )

    head = prompts.head.split("{")[0]
    firsts = [model.requests_of(node)[0].messages for node in ("planner", "executor", "replanner")]
    assert all(str(messages[0].content).startswith(head) for messages in firsts)
    planner, executor, replanner = (messages[-1].text for messages in firsts)
    assert planner == "Go\n\nPLANNER-X with tools:\n(none)"  # no tools of the caller's
    assert executor.startswith("EXECUTOR-X\n\n# Objective\nGo")
    assert replanner.startswith("REPLANNER-X\n\n# Objective\nGo")
    assert result["response"] == "GAVE UP after 1"


def test_a_prompt_with_an_unknown_placeholder_is_refused() -> None:
    with pytest.raises(ValueError, match="executor_task.*objectiv"):
        Prompts(executor_task="{objectiv}")


@both_modes
def test_stream_updates_come_in_node_order(mode: Mode) -> None:
    model = FakeChatModel(
        planner=[plan("a", "b")],
        executor=[text("A"), text("B")],
        replanner=[plan("b"), respond("AB")],
    )
    chunks = stream(
        build_plan_execute_graph(model, task_tools="compact"),
        "Do a then b",
        mode,
        stream_mode="updates",
    )
    assert [next(iter(c)) for c in chunks] == [
        "start_turn",
        "planner",
        "executor",
        "replanner",
        "executor",
        "replanner",
        *["answer"] * ANSWER_CALLS,
        "reply",
    ]
    opened = chunks.pop(0)["start_turn"]  # a new thread's first turn: its settings saved
    assert opened == {"carried_steps": [], "settings": Context().settings()}
    assert chunks[0]["planner"]["objective"] == "Do a then b"
    assert chunks[0]["planner"]["plan"] == [
        {"id": 1, "step": "a", "depends_on": []},
        {"id": 2, "step": "b", "depends_on": [1]},
    ]
    done_a = {"id": 1, "step": "a", "result": "A", "status": "done"}
    assert chunks[1]["executor"].pop("usage")["steps"]["1"]["calls"] == 1
    assert chunks[0]["planner"]["todos"] == [
        {"content": "a", "status": "in_progress"},
        {"content": "b", "status": "pending"},
    ]
    done = {"done": "a", "content": "a"}
    assert chunks[1]["executor"] == {"executed_steps": [done_a], "todos": done}
    # The kept step keeps its id and its link to the done step (whose result it still sees).
    assert chunks[2]["replanner"].pop("usage")["nodes"]["replanner"]["calls"] == 1
    assert chunks[2]["replanner"].pop("todos") == [
        {"content": "a", "status": "completed"},
        {"content": "b", "status": "in_progress"},
    ]
    assert chunks[2]["replanner"] == {
        "plan": [{"id": 2, "step": "b", "depends_on": [1]}],
        "iterations": 1,
    }
    assert chunks[4]["replanner"].pop("usage")["nodes"]["replanner"]["calls"] == 1
    assert chunks[4]["replanner"].pop("todos") == [
        {"content": "a", "status": "completed"},
        {"content": "b", "status": "completed"},
    ]
    assert chunks[4]["replanner"] == {"response": "AB", "plan": [], "iterations": 2}


@both_modes
def test_module_imports_and_exports_graph_without_an_api_key(
    monkeypatch: pytest.MonkeyPatch, mode: Mode
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    module = importlib.reload(plan_execute)

    assert module.graph.name == "plan_execute"
    assert module.graph.checkpointer is None
    assert {"planner", "executor", "replanner"} <= set(module.graph.nodes)
    with pytest.raises(ModelUnavailableError, match="OPENAI_API_KEY"):
        run(module.graph, "Anything", mode)


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="max_iterations"):
        build_plan_execute_graph(FakeChatModel(), max_iterations=0, task_tools="compact")
    with pytest.raises(ValueError, match="executor_max_steps"):
        build_plan_execute_graph(FakeChatModel(), executor_max_steps=0, task_tools="compact")
