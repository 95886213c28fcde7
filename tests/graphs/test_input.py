"""Input the plan–execute graph refuses when it is built or run, before any model call."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import BaseTool, tool

from replan.graphs.errors import InvalidInputError
from replan.graphs.plan_execute import build_plan_execute_graph
from tests.support.fake_models import FakeChatModel, Mode, both_modes, plan, respond, run, text


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"results for {query}"


def named(name: str) -> BaseTool:
    """A copy of `search` under another name."""
    return search.model_copy(update={"name": name})


@pytest.mark.parametrize(
    "graph_input",
    [
        {},
        {"messages": []},
        {"messages": [SystemMessage("You are helpful.")]},
        {"messages": [("user", "   \n\t")]},
        {"messages": [HumanMessage(content=[])]},
        {"messages": [("user", ""), ("ai", "Sure, what is the objective?")]},
    ],
)
@both_modes
def test_an_objective_without_text_is_refused_before_any_model_call(
    graph_input: dict[str, Any], mode: Mode
) -> None:
    model = FakeChatModel(
        planner=[plan("step")], executor=[text("done")], replanner=[respond("ok")]
    )
    with pytest.raises(InvalidInputError, match="no objective"):
        run(build_plan_execute_graph(model, task_tools="compact"), graph_input, mode)
    assert model.requests == []


def test_an_objective_in_a_later_user_message_is_enough() -> None:
    model = FakeChatModel(
        planner=[plan("step")], executor=[text("done")], replanner=[respond("ok")]
    )
    graph_input = {"messages": [SystemMessage("Be brief."), ("user", ""), ("user", "Ship it")]}
    assert (
        run(build_plan_execute_graph(model, task_tools="compact"), graph_input, "sync")["response"]
        == "ok"
    )
    assert "Ship it" in model.requests[0].prompt


@pytest.mark.parametrize(
    ("arguments", "error", "names"),
    [
        ({"max_iterations": True}, ValueError, "max_iterations"),
        ({"max_iterations": 1.5}, ValueError, "max_iterations"),
        ({"executor_max_steps": "3"}, ValueError, "executor_max_steps"),
        ({"mistake_retries": -1}, ValueError, "mistake_retries"),
        ({"mistake_retries": None}, ValueError, "mistake_retries"),
        ({"model": "gpt-4o-mini"}, TypeError, "model"),
        ({"checkpointer": "memory"}, TypeError, "checkpointer"),
        ({"prompts": {"planner": "x"}}, TypeError, "prompts"),
        ({"language": "fr"}, ValueError, "language"),
        ({"tools": search}, TypeError, "tools"),
        ({"tools": "search"}, TypeError, "tools"),
        ({"tools": [search, print]}, TypeError, r"tools\[1\]"),
    ],
)
def test_build_arguments_of_the_wrong_type_or_range_are_refused(
    arguments: dict[str, Any], error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names):
        build_plan_execute_graph(**{"model": FakeChatModel(), **arguments}, task_tools="compact")


@pytest.mark.parametrize(
    ("tool_names", "problem"),
    [
        (["web search"], "refused by the OpenAI API"),
        (["search.v2"], "refused by the OpenAI API"),
        ([""], "refused by the OpenAI API"),
        (["x" * 65], "refused by the OpenAI API"),
        (["search", "search"], "unique"),
        (["TaskCreate"], "task tool"),
        (["TaskList"], "task tool"),
    ],
)
def test_tools_with_unusable_names_are_refused_when_the_graph_is_built(
    tool_names: list[str], problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        build_plan_execute_graph(
            FakeChatModel(), [named(name) for name in tool_names], task_tools="compact"
        )


def test_acceptable_names_and_arguments_build() -> None:
    tools = [named("search"), named("web-search_2"), named("x" * 64)]
    graph = build_plan_execute_graph(
        FakeChatModel(), tuple(tools), checkpointer=False, task_tools="compact"
    )
    assert {"planner", "executor", "replanner"} <= set(graph.nodes)
