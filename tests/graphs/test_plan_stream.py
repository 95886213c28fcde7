"""The plan stream (`replan.graphs.plan_stream`) and the `todos` key (`replan.graphs.plan.todos`):
what a client streaming the graph the usual way (no `subgraphs=True`) sees of a run, and the
to-do list chat UIs draw."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command
from typing_extensions import TypedDict

from replan.graphs.context import Context
from replan.graphs.plan.todos import Todo, merge_todos, plan_todos, step_done
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.graphs.plan_stream import EVENT_KINDS, PLAN_STREAM_VERSION, STREAM_KEY
from tests.support.fake_models import FakeChatModel, Mode, both_modes, call, plan, run, stream, text


@tool
def lookup(city: str) -> str:
    """The weather in `city`."""
    return f"sunny in {city}"


def _plan(*steps: Any) -> AIMessage:
    return call("plan", steps=list(steps))


def _model() -> FakeChatModel:
    """A plan of a tool step and a text step that calls the tool in its own loop."""
    return FakeChatModel(
        planner=[_plan({"tool": "lookup", "args": {"city": "Oslo"}}, "Compare with Rome")],
        executor=[call("lookup", city="Rome"), text("Rome is sunny too")],
        replanner=[call("respond", response="Both sunny")],
    )


WHEN_NEEDED = Context(replan="when_needed")
"""The text step runs after the tool step without the replanner being asked in between."""


def _chunks(mode: Mode, **kwargs: Any) -> list[Any]:
    graph = build_plan_execute_graph(_model(), [lookup])
    objective = "Weather in Oslo and Rome?"
    return stream(graph, objective, mode, stream_mode="custom", context=WHEN_NEEDED, **kwargs)


def _events(mode: Mode) -> list[dict[str, Any]]:
    events = _chunks(mode)
    assert all(event[STREAM_KEY] == PLAN_STREAM_VERSION for event in events)
    assert {event["event"] for event in events} <= set(EVENT_KINDS)
    return events


@both_modes
def test_a_client_streaming_the_graph_the_usual_way_sees_the_whole_plan_unfold(
    mode: Mode,
) -> None:
    events = _events(mode)
    shown = [(e["event"], e["node"], e.get("step")) for e in events]
    assert shown[:3] == [
        ("node_started", "planner", None),
        ("plan", "planner", None),
        ("node_finished", "planner", None),
    ]
    (planned,) = [e for e in events if e["event"] == "plan"]
    assert planned["steps"] == [
        {"id": 1, "text": 'lookup(city="Oslo")', "depends_on": [], "tool": "lookup"},
        {"id": 2, "text": "Compare with Rome", "depends_on": [1]},
    ]
    assert planned["revised"] is False and planned["added"] == [1, 2]
    # the calls made inside the text step's own loop come with its step id, without subgraphs
    calls = [(e["event"], e["step"], e["name"]) for e in events if e["event"].startswith("tool")]
    assert calls == [
        ("tool_call", 1, "lookup"),
        ("tool_result", 1, "lookup"),
        ("tool_call", 2, "lookup"),
        ("tool_result", 2, "lookup"),
    ]
    rome = [e for e in events if e["event"] == "tool_result"][1]
    assert rome["summary"] == "sunny in Rome" and rome["error"] is False
    finished = {e["step"]: e for e in events if e["event"] == "step_finished"}
    assert finished[1]["status"] == "done" and finished[1]["tokens"]["calls"] == 0
    assert finished[2]["summary"] == "Rome is sunny too"
    assert finished[2]["tokens"]["calls"] == 2 and finished[2]["seconds"] >= 0
    replanner = [e for e in events if e["node"] == "replanner" and e["event"] == "node_finished"]
    assert [e["tokens"]["calls"] for e in replanner] == [0, 1]  # asked once, after step 2
    assert events[-1]["event"] == "answer" and events[-1]["text"] == "Both sunny"
    assert events[-1]["stop_reason"] == ""


@both_modes
def test_streaming_subgraphs_too_shows_each_event_once(mode: Mode) -> None:
    chunks = _chunks(mode, subgraphs=True)  # (namespace, chunk) pairs, an inner call's nested
    kinds = [chunk["event"] for _, chunk in chunks]
    assert kinds.count("tool_call") == 2 and kinds.count("answer") == 1


def test_a_review_pause_is_an_event_and_its_answer_is_not() -> None:
    model = FakeChatModel(
        planner=[plan("draft", "publish")],
        executor=[text("drafted"), text("published")],
        replanner=[call("respond", response="done")],
    )
    graph = build_plan_execute_graph(model, checkpointer=InMemorySaver(), task_tools="compact")
    config: RunnableConfig = {"configurable": {"thread_id": "review"}}
    context = Context(approve_plan=True)
    paused = stream(graph, "Post", "sync", config=config, context=context, stream_mode="custom")
    (pause,) = [e for e in paused if e["event"] == "pause"]
    assert pause["node"] == "review_plan"
    assert pause["request"]["action_requests"][0]["name"] == "plan"
    assert graph.get_state(config).values["todos"] == [
        {"content": "draft", "status": "pending"},  # nothing runs before the review
        {"content": "publish", "status": "pending"},
    ]
    resumed = stream(
        graph,
        Command(resume={"decisions": [{"type": "approve"}]}),
        "sync",
        config=config,
        context=context,
        stream_mode=["custom", "updates"],
    )
    assert not [c for kind, c in resumed if kind == "custom" and c["event"] == "pause"]
    review = [c["review_plan"] for kind, c in resumed if kind == "updates" and "review_plan" in c]
    assert review[0]["todos"][0] == {"content": "draft", "status": "in_progress"}


# --- todos ------------------------------------------------------------------------------------


def test_a_plan_becomes_a_todo_list_and_steps_finish_one_by_one() -> None:
    todos = plan_todos([("looked up", "done"), ("fetched", "failed")], [(3, "a"), (4, "b")], {3})
    assert todos == [
        {"content": "looked up", "status": "completed"},
        {"content": "fetched (failed)", "status": "completed"},
        {"content": "a", "status": "in_progress"},
        {"content": "b", "status": "pending"},
    ]
    todos = merge_todos(todos, step_done("a", "unfinished"))
    assert todos[2] == {"content": "a (unfinished)", "status": "completed"}
    assert merge_todos(todos, step_done("not listed", "done")) == todos
    assert merge_todos(todos, []) == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_todos_follow_the_run_and_stay_out_of_its_output(mode: Mode) -> None:
    graph = build_plan_execute_graph(_model(), [lookup], checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "todos"}}
    result = run(graph, "Weather in Oslo and Rome?", mode, config=config, context=WHEN_NEEDED)

    assert "todos" not in result
    assert graph.get_state(config).values["todos"] == [
        {"content": 'lookup(city="Oslo")', "status": "completed"},
        {"content": "Compare with Rome", "status": "completed"},
    ]


class _Parent(TypedDict, total=False):
    messages: list[Any]
    todos: list[Todo]


def test_a_parent_agents_own_todos_are_left_as_they_are() -> None:
    inner = build_plan_execute_graph(_model(), [lookup])
    builder = StateGraph(_Parent)
    builder.add_node("replan", inner)
    builder.add_edge(START, "replan")
    mine: list[Todo] = [{"content": "the parent's own item", "status": "in_progress"}]
    parent = builder.compile()
    asked = {"messages": [("user", "Weather in Oslo and Rome?")], "todos": mine}
    out = parent.invoke(asked, context=WHEN_NEEDED)
    assert out["todos"] == mine
