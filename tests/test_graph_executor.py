"""The executor: task tools in parallel, the task list across steps, the step budget."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from graphs.plan_execute import build_plan_execute_graph
from state import format_task_list
from tests.fake_models import FakeChatModel, call, calls, plan, respond, run, text


def _create(subject: str) -> tuple[str, dict[str, str]]:
    return "TaskCreate", {"subject": subject, "description": f"{subject} in detail"}


def test_parallel_task_creates_in_one_turn_give_tasks_1_2_3() -> None:
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
    graph = build_plan_execute_graph(model, checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "tasks"}}
    run(graph, "Plan a comparison", config=config)

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


def test_executor_stops_at_its_step_budget_and_reports_the_step_unfinished() -> None:
    model = FakeChatModel(
        planner=[plan("list the tasks forever")],
        executor=[call("TaskList")] * 3,
        replanner=[respond("stopped early")],
    )
    result = run(build_plan_execute_graph(model, executor_max_steps=3), "Loop")

    assert len(model.requests_of("executor")) == 3
    step_result = result["executed_steps"][0]["result"]
    assert step_result.startswith("UNFINISHED") and "3 model calls" in step_result
    assert "TaskList" in step_result  # the last tool results are kept as progress
    assert "UNFINISHED" in model.requests_of("replanner")[0].prompt
    assert result["response"] == "stopped early"


def test_tool_errors_go_back_to_the_model_not_up_the_stack() -> None:
    model = FakeChatModel(
        planner=[plan("get a missing task")],
        executor=[call("TaskGet", taskId="99"), text("there is no task 99")],
        replanner=[respond("no such task")],
    )
    result = run(build_plan_execute_graph(model), "Find task 99")

    tool_reply = model.requests_of("executor")[1].messages[-1]
    assert tool_reply.type == "tool" and "99" in str(tool_reply.content)
    assert result["executed_steps"][0]["result"] == "there is no task 99"


def test_a_long_step_within_budget_is_not_cut_by_the_recursion_limit() -> None:
    # 12 model turns plus 11 tool runs: more super-steps than the outer graph's limit allows.
    model = FakeChatModel(
        planner=[plan("list the tasks many times")],
        executor=[call("TaskList")] * 11 + [text("listed them all")],
        replanner=[respond("ok")],
    )
    graph = build_plan_execute_graph(model, max_iterations=1, executor_max_steps=12)
    result = run(graph, "Loop a while")
    assert result["executed_steps"][0]["result"] == "listed them all"
