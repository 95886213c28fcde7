"""A thread is a conversation: each turn's answer is a message, a follow-up plans with what came
before, and each turn's plan, steps, answer and stop reason are its own."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from replan.graphs.context import Context
from replan.graphs.plan_execute import build_plan_execute_graph
from tests.support.fake_models import (
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

CONFIG: RunnableConfig = {"configurable": {"thread_id": "chat"}}


def _chat() -> tuple[Any, FakeChatModel]:
    model = FakeChatModel(
        planner=[plan("greet"), plan("wave goodbye")],
        executor=[text("Said hello."), text("Waved.")],
        replanner=[respond("Hello!"), respond("Goodbye!")],
    )
    return build_plan_execute_graph(
        model, checkpointer=InMemorySaver(), task_tools="compact"
    ), model


@both_modes
def test_the_answer_is_appended_to_the_conversation_as_replans_message(mode: Mode) -> None:
    graph, _ = _chat()
    result = run(graph, "Say hello", mode, config=CONFIG)

    question, answer = result["messages"]
    assert isinstance(question, HumanMessage) and isinstance(answer, AIMessage)
    assert (answer.text, answer.name) == ("Hello!", "replan")
    assert result["response"] == "Hello!"  # the output keeps it too
    assert answer.usage_metadata is not None and answer.usage_metadata["total_tokens"] >= 0
    assert answer.response_metadata["stop_reason"] == ""


@both_modes
def test_a_follow_up_plans_with_the_conversation_and_keeps_its_own_steps(mode: Mode) -> None:
    graph, model = _chat()
    run(graph, "Say hello", mode, config=CONFIG)
    result = run(graph, "Now say goodbye", mode, config=CONFIG)

    roles = [type(m).__name__ for m in result["messages"]]
    assert roles == ["HumanMessage", "AIMessage", "HumanMessage", "AIMessage"]
    assert result["messages"][-1].text == "Goodbye!"
    follow_up = model.requests_of("planner")[1]
    assert "Hello!" in follow_up.prompt and "Said hello." in follow_up.prompt
    assert [done["step"] for done in result["executed_steps"]] == ["wave goodbye"]
    (first,) = result["turns"]
    assert (first["objective"], first["response"], first["stop_reason"]) == (
        "Say hello",
        "Hello!",
        "",
    )
    assert [done["step"] for done in first["executed_steps"]] == ["greet"]
    replanner = model.requests_of("replanner")[1].prompt
    assert "Now say goodbye" in replanner and "Said hello." not in replanner
    assert "Earlier in this conversation:\nUser: Say hello\nAnswer: Hello!" in replanner


def test_a_turns_usage_is_its_own_and_the_answer_carries_it() -> None:
    graph, _ = _chat()
    first = graph.invoke({"messages": [("user", "Say hello")]}, CONFIG)
    second = graph.invoke({"messages": [("user", "Now say goodbye")]}, CONFIG)

    calls = second["usage"]["nodes"]
    assert {node: tally["calls"] for node, tally in calls.items()} == {
        "planner": 1,
        "executor": 1,
        "replanner": 1,
    }
    assert second["turns"][0]["usage"] == first["usage"]


@tool
def price(item: str) -> str:
    """The price of an item."""
    return {"tea": "4.20", "cake": "3.10"}[item]


def test_a_follow_up_may_use_the_turn_befores_results_by_number() -> None:
    calls: list[str] = []

    @tool
    def stock(item: str) -> str:
        """How many of an item are in stock."""
        calls.append(item)
        return "12"

    model = FakeChatModel(
        planner=[
            call("plan", steps=[{"tool": "stock", "args": {"item": "tea"}}]),
            call("plan", steps=[{"step": "Order what is in stock", "depends_on": [1]}]),
        ],
        executor=[text("Ordered 12.")],
        replanner=[respond("12 in stock."), respond("Ordered 12.")],
    )
    graph = build_plan_execute_graph(
        model, [stock], checkpointer=InMemorySaver(), task_tools="compact"
    )
    run(graph, "How much tea is in stock?", config=CONFIG)
    result = run(graph, "Order all of it", config=CONFIG)

    follow_up = model.requests_of("planner")[1].prompt
    assert '1. stock(item="tea") → 12' in follow_up
    assert "Number the steps of the next plan from 2." in follow_up
    assert calls == ["tea"]  # no second look-up
    assert "12" in model.requests_of("executor")[0].prompt  # the step saw turn 1's result
    assert [(d["id"], d["step"]) for d in result["executed_steps"]] == [
        (2, "Order what is in stock")
    ]


def test_the_task_list_carries_over_to_the_next_turn() -> None:
    model = FakeChatModel(
        planner=[plan("note it"), plan("list them")],
        executor=[
            call("TaskCreate", subject="Buy tea", description="For the office"),
            text("Noted."),
            call("TaskList"),
            text("One task: Buy tea."),
        ],
        replanner=[respond("Noted."), respond("Buy tea.")],
    )
    graph = build_plan_execute_graph(model, checkpointer=InMemorySaver(), task_tools="compact")
    run(graph, "Note that we need tea", config=CONFIG)
    run(graph, "What is on the list?", config=CONFIG)

    tasks = graph.get_state(CONFIG).values["tasks_context"]
    assert [task.subject for task in tasks.sorted_tasks()] == ["Buy tea"]
    assert "Buy tea" in model.requests_of("executor")[-1].prompt


def test_a_report_of_a_turn_not_finished_is_the_message_too() -> None:
    model = FakeChatModel(
        planner=[plan("a", "b", "c")], executor=[text("A")], replanner=[plan("b", "c")]
    )
    graph = build_plan_execute_graph(model, max_iterations=1, task_tools="compact")
    result = run(graph, "Do three things")

    assert result["stop_reason"] == "max_iterations"
    assert result["messages"][-1].text == result["response"]
    assert result["messages"][-1].response_metadata["stop_reason"] == "max_iterations"


@both_modes
def test_the_answer_message_comes_in_the_messages_stream(mode: Mode) -> None:
    graph, _ = _chat()
    items = stream(graph, "Say hello", mode, config=CONFIG, stream_mode="messages")

    replies = [m for m, meta in items if meta["langgraph_node"] == "reply"]
    assert [(type(m), m.text) for m in replies] in (
        [(AIMessage, "Hello!")],
        [(AIMessageChunk, "Hello!")],
    )


def test_a_new_message_on_a_turn_waiting_for_approval_leaves_that_turn_superseded() -> None:
    graph, model = _chat()
    run(graph, "Say hello", config=CONFIG, context=Context(approve_plan=True))
    result = run(graph, "Now say goodbye", config=CONFIG, context={"approve_plan": False})

    (first,) = result["turns"]
    assert first["stop_reason"] == "superseded" and first["executed_steps"] == []
    texts = [m.text for m in result["messages"]]
    assert texts[0] == "Say hello" and texts[2:] == ["Now say goodbye", "Hello!"]
    assert texts[1].startswith("The objective was left unfinished")
    assert model.requests_of("planner")[1].messages[-1].text.startswith("Now say goodbye\n\n")


def test_a_rejected_plan_then_a_follow_up() -> None:
    graph, _ = _chat()
    run(graph, "Say hello", config=CONFIG, context=Context(approve_plan=True))
    rejected = run(graph, Command(resume={"decisions": [{"type": "reject"}]}), config=CONFIG)
    assert rejected["stop_reason"] == "rejected"
    again = run(graph, "Say hello, please", config=CONFIG, context={"approve_plan": False})
    assert again["response"] == "Hello!" and again["turns"][0]["stop_reason"] == "rejected"
