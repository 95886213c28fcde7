"""The executor: task tools in parallel, the task list across steps, the step budget, and
tool calls the model got wrong."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, interrupt

from replan.graphs.plan_execute import build_plan_execute_graph
from replan.state import format_task_list
from tests.support.fake_models import (
    FakeChatModel,
    Mode,
    Request,
    both_modes,
    call,
    calls,
    malformed,
    plan,
    respond,
    run,
    text,
)


def _create(subject: str) -> tuple[str, dict[str, str]]:
    return "TaskCreate", {"subject": subject, "description": f"{subject} in detail"}


def _reply_to(turn: AIMessage, request: Request) -> ToolMessage:
    """The tool reply `request` showed the model for the one call (valid or not) of `turn`."""
    (call_id,) = [c["id"] for c in [*turn.tool_calls, *turn.invalid_tool_calls]]
    (reply,) = [
        m for m in request.messages if isinstance(m, ToolMessage) and m.tool_call_id == call_id
    ]
    return reply


@both_modes
def test_parallel_task_creates_in_one_turn_give_tasks_1_2_3(mode: Mode) -> None:
    model = FakeChatModel(
        planner=[plan("break the work down", "do the first task")],
        executor=[
            calls(_create("Collect"), _create("Compare"), _create("Recommend")),
            text("made three tasks"),
            call("TaskUpdate", taskId="1", status="in_progress"),
            text("working on #1"),
        ],
        replanner=[plan("do the first task"), respond("three tasks planned")],
    )
    graph = build_plan_execute_graph(model, checkpointer=InMemorySaver(), task_tools="compact")
    config: RunnableConfig = {"configurable": {"thread_id": "tasks"}}
    run(graph, "Plan a comparison", mode, config=config)

    tasks = graph.get_state(config).values["tasks_context"]
    assert [(t.id, t.subject) for t in tasks.sorted_tasks()] == [
        ("1", "Collect"),
        ("2", "Compare"),
        ("3", "Recommend"),
    ]
    assert tasks.get("1").status == "in_progress"
    # The next step and the replanner see the list the first step left behind.
    listing = format_task_list(tasks)
    second_step = model.requests_of("executor")[2]
    assert "#1" in second_step.prompt and "#3" in second_step.prompt and "Recommend" in listing
    assert "#2" in model.requests_of("replanner")[0].prompt


@both_modes
def test_executor_stops_at_its_step_budget_and_reports_the_step_unfinished(mode: Mode) -> None:
    model = FakeChatModel(
        planner=[plan("list the tasks forever")],
        executor=[call("TaskList")] * 3,
        replanner=[respond("stopped early")],
    )
    result = run(
        build_plan_execute_graph(model, executor_max_steps=3, task_tools="compact"), "Loop", mode
    )

    assert len(model.requests_of("executor")) == 3
    step_result = result["executed_steps"][0]["result"]
    assert step_result.startswith("UNFINISHED") and "3 model calls" in step_result
    assert "TaskList" in step_result  # the last tool results are kept as progress
    assert "UNFINISHED" in model.requests_of("replanner")[0].prompt
    assert result["response"] == "stopped early"


@both_modes
def test_a_blank_final_reply_leaves_the_step_unfinished_not_done(mode: Mode) -> None:
    model = FakeChatModel(
        planner=[plan("update a task")],
        executor=[call("TaskGet", taskId="Task #3"), text("  \n")],
        replanner=[respond("nothing was reported")],
    )
    result = run(build_plan_execute_graph(model, task_tools="compact"), "Update task 3", mode)

    (done,) = result["executed_steps"]
    assert done["status"] == "unfinished"
    assert done["result"].startswith("UNFINISHED: the executor ended the step with an empty reply")
    assert "TaskGet" in done["result"]  # the last tool results are kept as progress


def test_a_failure_report_in_a_code_fence_is_a_failed_step() -> None:
    model = FakeChatModel(
        planner=[plan("update task 11")],
        executor=[text("```\nFAILED: Task #11 is not a task ID.\n```")],
        replanner=[respond("could not")],
    )
    result = run(build_plan_execute_graph(model, task_tools="compact"), "Update task 11")

    assert result["executed_steps"][0]["status"] == "failed"


def test_tool_errors_go_back_to_the_model_not_up_the_stack() -> None:
    model = FakeChatModel(
        planner=[plan("get a missing task")],
        executor=[call("TaskGet", taskId="99"), text("there is no task 99")],
        replanner=[respond("no such task")],
    )
    result = run(build_plan_execute_graph(model, task_tools="compact"), "Find task 99")

    tool_reply = model.requests_of("executor")[1].messages[-1]
    assert tool_reply.type == "tool" and "99" in str(tool_reply.content)
    assert result["executed_steps"][0]["result"] == "there is no task 99"


@both_modes
def test_malformed_arguments_get_an_error_reply_and_the_model_calls_again(mode: Mode) -> None:
    bad = malformed("TaskCreate", '{"subject": "Coll')
    model = FakeChatModel(
        planner=[plan("make a task")],
        executor=[bad, call("TaskCreate", subject="Collect", description="d"), text("made #1")],
        replanner=[respond("ok")],
    )
    graph = build_plan_execute_graph(model, checkpointer=InMemorySaver(), task_tools="compact")
    config: RunnableConfig = {"configurable": {"thread_id": "malformed"}}
    result = run(graph, "Make a task", mode, config=config)

    second = model.requests_of("executor")[1]
    reply = _reply_to(bad, second)
    assert reply.status == "error" and reply.name == "TaskCreate"
    assert "not valid JSON" in str(reply.content) and "again" in str(reply.content)
    assert result["executed_steps"][0]["result"] == "made #1"
    assert graph.get_state(config).values["tasks_context"].get("1").subject == "Collect"


def test_malformed_and_valid_calls_in_one_turn_each_get_a_reply() -> None:
    good = call("TaskCreate", subject="Collect", description="d")
    bad = malformed("TaskCreate", "raw not json")
    both = AIMessage(
        content="", tool_calls=good.tool_calls, invalid_tool_calls=bad.invalid_tool_calls
    )
    model = FakeChatModel(
        planner=[plan("make tasks")],
        executor=[both, text("made one of two")],
        replanner=[respond("ok")],
    )
    run(build_plan_execute_graph(model, task_tools="compact"), "Make tasks")

    second = model.requests_of("executor")[1]
    assert _reply_to(good, second).status == "success"
    assert "Task #1 created" in str(_reply_to(good, second).content)
    assert _reply_to(bad, second).status == "error"


def test_malformed_call_on_the_last_allowed_turn_leaves_the_step_unfinished() -> None:
    model = FakeChatModel(
        planner=[plan("make a task")],
        executor=[malformed("TaskCreate", "{")],
        replanner=[respond("gave up")],
    )
    result = run(
        build_plan_execute_graph(model, executor_max_steps=1, task_tools="compact"), "Make a task"
    )

    assert len(model.requests_of("executor")) == 1
    step_result = result["executed_steps"][0]["result"]
    assert step_result.startswith("UNFINISHED") and "not valid JSON" in step_result


@both_modes
def test_a_call_to_an_unknown_tool_gets_an_error_reply(mode: Mode) -> None:
    unknown = call("Teleport", where="mars")
    model = FakeChatModel(
        planner=[plan("go to mars")],
        executor=[unknown, text("there is no such tool")],
        replanner=[respond("cannot")],
    )
    result = run(build_plan_execute_graph(model, task_tools="compact"), "Go to Mars", mode)

    reply = _reply_to(unknown, model.requests_of("executor")[1])
    assert reply.status == "error"
    assert "Teleport is not a valid tool" in str(reply.content) and "TaskCreate" in str(
        reply.content
    )
    assert result["executed_steps"][0]["result"] == "there is no such tool"


@both_modes
@pytest.mark.parametrize("store", [None, "in memory"])
def test_a_tool_may_interrupt_and_the_step_resumes_where_it_stopped(
    mode: Mode, store: str | None
) -> None:
    @tool
    def ask_person(question: str) -> str:
        """Ask the person running the agent."""
        return f"they said {interrupt(question)}"

    model = FakeChatModel(
        planner=[plan("check with them")],
        executor=[
            call("ask_person", question="Go ahead?"),
            lambda request: text(str(request.messages[-1].content)),
        ],
        replanner=[respond("confirmed")],
    )
    graph = build_plan_execute_graph(  # with a store, its call's intent is written too
        model,
        [ask_person],
        checkpointer=InMemorySaver(),
        store=InMemoryStore() if store else None,
        task_tools="compact",
    )
    config: RunnableConfig = {"configurable": {"thread_id": "ask"}}

    (paused,) = run(graph, "Confirm", mode, config=config)["__interrupt__"]
    assert paused.value == "Go ahead?"
    result = run(graph, Command(resume="yes"), mode, config=config)

    assert result["executed_steps"][0]["result"] == "they said yes"
    assert len(model.requests_of("executor")) == 2  # the first turn was not asked again
