"""The tutorial baseline (benchmarks/tutorial.py) asks as the tutorial's page asks: plain
structured output with described fields, a ReAct agent free to call tools in parallel, bounds
as given; and its multi-turn form carries the conversation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError

from benchmarks.react import react_agent, react_config
from benchmarks.tutorial import (
    baseline_chat_model,
    forcing_decision,
    tutorial_decision,
    tutorial_graph,
    tutorial_turn,
)
from replan.testing import MODEL_ID, Reply, ScriptedOpenAIServer, text, tool_call, tool_calls
from replan.testing.requests import message_text

LOOKED_UP: list[str] = []


@tool
def look_up(name: str) -> str:
    """Look a name up."""
    LOOKED_UP.append(name)
    return f"{name} is 1"


def _respond(request: dict[str, Any]) -> Reply:
    """Plan one step, answer after it; the agent looks two names up at once, then reports."""
    decision = tutorial_decision(request)
    if decision == "Plan":
        return tool_call("Plan", {"steps": ["Look up a and b"]})
    if decision == "Act":
        return tool_call("Act", {"action": {"response": "a and b are 1"}})
    if request["messages"][-1]["role"] == "tool":
        return text("both are 1")
    return tool_calls([("look_up", {"name": "a"}), ("look_up", {"name": "b"})])


def _schema(request: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = request["response_format"]["json_schema"]["schema"]
    return schema


def test_the_tutorial_asks_for_json_schemas_and_lets_its_agent_call_in_parallel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    LOOKED_UP.clear()
    with ScriptedOpenAIServer(_respond) as server:

        def model(limit: int) -> Any:
            return baseline_chat_model(
                server.base_url, MODEL_ID, max_tokens=limit, timeout=5, max_retries=0
            )

        graph = tutorial_graph(model(200), None, [look_up], decision_model=model(100))
        result = asyncio.run(graph.ainvoke({"input": "What are a and b?"}))
        planner, agent, _, replanner = server.requests
    assert result["response"] == "a and b are 1"
    assert sorted(LOOKED_UP) == ["a", "b"]  # both calls of one reply ran
    for decision, name in ((planner, "Plan"), (replanner, "Act")):
        assert decision["response_format"]["type"] == "json_schema"
        assert decision["response_format"]["json_schema"]["name"] == name
        assert "tools" not in decision and "tool_choice" not in decision
        assert decision["max_tokens"] == 100
    steps = _schema(planner)["properties"]["steps"]
    assert "order" in steps["description"]
    action = _schema(replanner)["properties"]["action"]["description"]
    assert "Response" in action and "Plan" in action and "tools" in action
    assert agent["max_tokens"] == 200 and "parallel_tool_calls" not in agent
    assert [t["function"]["name"] for t in agent["tools"]] == ["look_up"]
    assert message_text(agent["messages"][-1]).startswith("The plan:\n1. Look up a and b")


def test_the_multi_turn_form_carries_the_conversation_and_starts_each_objective_afresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with ScriptedOpenAIServer(_respond) as server:
        model = baseline_chat_model(
            server.base_url, MODEL_ID, max_tokens=50, timeout=5, max_retries=0
        )
        graph = tutorial_graph(model, InMemorySaver(), [look_up])
        config: Any = {"configurable": {"thread_id": "t"}}

        async def two_turns() -> dict[str, Any]:
            await graph.ainvoke(tutorial_turn("What is a?"), config)
            return dict(await graph.ainvoke(tutorial_turn("And b?"), config))

        result = asyncio.run(two_turns())
        second_planner = server.requests[4]
    assert [m.content for m in result["messages"]] == [
        "What is a?",
        "a and b are 1",
        "And b?",
        "a and b are 1",
    ]
    assert result["input"] == "And b?" and len(result["past_steps"]) == 1
    shown = [(m["role"], message_text(m)) for m in second_planner["messages"]]
    assert shown[1:] == [
        ("user", "What is a?"),
        ("assistant", "a and b are 1"),
        ("user", "And b?"),
    ]


def test_the_agent_stops_at_its_step_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")

    def looping(request: dict[str, Any]) -> Reply:
        decision = tutorial_decision(request)
        if decision == "Plan":
            return tool_call("Plan", {"steps": ["Look up a"]})
        if decision == "Act":
            return tool_call("Act", {"action": {"response": "gave up"}})
        return tool_call("look_up", {"name": "a"})  # never done

    with ScriptedOpenAIServer(looping) as server:
        model = baseline_chat_model(
            server.base_url, MODEL_ID, max_tokens=50, timeout=5, max_retries=0
        )
        graph = tutorial_graph(model, None, [look_up], executor_max_steps=3)
        # the graph's own, larger limit does not lift the agent's
        result = asyncio.run(graph.ainvoke({"input": "What is a?"}, {"recursion_limit": 50}))
        agent_calls = len(server.requests) - 2  # less the planner and the replanner
    assert agent_calls == 3
    ((step, said),) = result["past_steps"]
    assert step == "Look up a" and "more steps" in said  # the prebuilt agent's own words


def test_decisions_are_read_from_response_formats_and_forced_tools() -> None:
    asked = {"response_format": {"type": "json_schema", "json_schema": {"name": "Act"}}}
    forced = {"tool_choice": {"type": "function", "function": {"name": "Plan"}}}
    assert tutorial_decision(asked) == "Act" and tutorial_decision(forced) == "Plan"
    assert tutorial_decision({"tool_choice": {"function": {"name": "plan"}}}) is None
    assert forcing_decision(asked)["tool_choice"]["function"]["name"] == "Act"
    assert forcing_decision(forced) == forced and forcing_decision({}) == {}


def test_baseline_models_bound_replies_as_replan_does() -> None:
    local = baseline_chat_model(
        "http://127.0.0.1:1/v1", "m", max_tokens=7, timeout=3, max_retries=2
    )
    assert local.extra_body == {"max_tokens": 7} and local.max_tokens is None
    openai = baseline_chat_model(None, "m", max_tokens=7, timeout=3, max_retries=2)
    assert openai.max_tokens == 7 and not openai.extra_body
    assert (local.temperature, local.request_timeout, local.max_retries) == (0, 3, 2)


def test_the_react_agent_stops_at_its_step_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with ScriptedOpenAIServer(lambda request: tool_call("look_up", {"name": "a"})) as server:
        model = baseline_chat_model(
            server.base_url, MODEL_ID, max_tokens=50, timeout=5, max_retries=0
        )
        agent = react_agent(model, [look_up], InMemorySaver())

        async def both() -> tuple[int, Any]:
            with pytest.raises(GraphRecursionError):
                await agent.ainvoke({"messages": [("user", "a?")]}, react_config("t", 3))
            looped = len(server.requests)
            server.push(text("a is 1"))  # a reply that answers ends the turn within the bound
            done = await agent.ainvoke({"messages": [("user", "b?")]}, react_config("u", 1))
            return looped, done

        looped, done = asyncio.run(both())
    assert looped == 3
    assert done["messages"][-1].text == "a is 1"
