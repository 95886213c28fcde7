"""Task tools in parallel executor branches: every branch's changes end up in one list, with
unique IDs and both sides of every edge, as if the branches had run one after another."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from replan.graphs.context import Context
from replan.graphs.plan.task_merge import (
    TaskReplay,
    applied_task_calls,
    highest_task_id,
    merge_task_updates,
    task_replay,
)
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.state import TaskContext
from tests.support.fake_models import (
    FakeChatModel,
    Mode,
    Request,
    both_modes,
    call,
    calls,
    run,
    text,
)


def _create(subject: str) -> tuple[str, dict[str, Any]]:
    return "TaskCreate", {"subject": subject, "description": f"{subject}, in detail"}


def _seeded(count: int = 2) -> TaskContext:
    context = TaskContext()
    for number in range(1, count + 1):
        context.create(f"seed {number}")
    return context


def _replay(start: TaskContext, *task_calls: tuple[str, dict[str, Any]]) -> TaskReplay:
    return {
        "task_calls": [{"name": name, "args": args} for name, args in task_calls],
        "created_after": highest_task_id(start),
        "clear_when_all_completed": True,
    }


def _edges_are_symmetric(context: TaskContext) -> bool:
    tasks = {task.id: task for task in context.tasks}
    return all(
        task.id in tasks[other].blocked_by for task in context.tasks for other in task.blocks
    ) and all(task.id in tasks[other].blocks for task in context.tasks for other in task.blocked_by)


def test_two_branches_that_create_and_link_tasks_keep_all_of_them() -> None:
    start = _seeded()
    first = _replay(
        start,
        _create("a1"),
        _create("a2"),
        ("TaskUpdate", {"taskId": "4", "addBlockedBy": ["3"]}),
        ("TaskUpdate", {"taskId": 1, "status": "in_progress"}),
    )
    second = _replay(
        start,
        _create("b1"),
        ("TaskUpdate", {"taskId": "#3", "addBlocks": ["2"], "owner": "bea"}),
    )
    merged = merge_task_updates(merge_task_updates(start, first), second)

    by_subject = {task.subject: task for task in merged.tasks}
    assert [t.id for t in merged.sorted_tasks()] == ["1", "2", "3", "4", "5"]
    assert by_subject["a2"].blocked_by == ["3"] and by_subject["a1"].id == "3"
    assert by_subject["b1"].id == "5" and by_subject["b1"].owner == "bea"
    assert by_subject["b1"].blocks == ["2"] and by_subject["seed 2"].blocked_by == ["5"]
    assert by_subject["seed 1"].status == "in_progress"
    assert merged.high_watermark == 5 and _edges_are_symmetric(merged)
    assert [t.subject for t in start.tasks] == ["seed 1", "seed 2"]  # the start is untouched


def test_a_call_the_merged_list_refuses_is_dropped_like_in_a_sequential_run() -> None:
    start = _seeded()
    deleting = _replay(start, ("TaskUpdate", {"taskId": "1", "status": "deleted"}))
    updating = _replay(
        start, ("TaskUpdate", {"taskId": "1", "owner": "late"}), _create("still created")
    )
    merged = merge_task_updates(merge_task_updates(start, deleting), updating)
    assert [(t.id, t.subject, t.owner) for t in merged.sorted_tasks()] == [
        ("2", "seed 2", None),
        ("3", "still created", None),
    ]


def test_a_whole_task_list_written_to_the_channel_still_replaces_it() -> None:
    replacement = _seeded(1)
    assert merge_task_updates(_seeded(), replacement) is replacement
    assert merge_task_updates(_seeded(), replacement.model_dump()).tasks[0].subject == "seed 1"


def test_only_task_changes_that_were_applied_are_replayed() -> None:
    turn = AIMessage(
        content="",
        tool_calls=[
            {"name": "TaskCreate", "args": {"subject": "ok"}, "id": "c1"},
            {"name": "TaskUpdate", "args": {"taskId": "9"}, "id": "c2"},
            {"name": "TaskList", "args": {}, "id": "c3"},
            {"name": "lookup", "args": {"q": "x"}, "id": "c4"},
        ],
    )
    messages = [
        HumanMessage("step"),
        turn,
        ToolMessage("Task #1 created", tool_call_id="c1"),
        ToolMessage("Task #9 does not exist", tool_call_id="c2", status="error"),
        ToolMessage("#1 [pending] ok", tool_call_id="c3"),
        ToolMessage("found", tool_call_id="c4"),
    ]
    assert applied_task_calls(messages) == [{"name": "TaskCreate", "args": {"subject": "ok"}}]
    assert task_replay(TaskContext(), messages[:2]) is None  # calls without replies never ran


# --- through the graph ----------------------------------------------------------------------

CONFIG: RunnableConfig = {"configurable": {"thread_id": "parallel-tasks"}}
BRANCHES = ("alpha", "beta", "gamma")


def _turns(request: Request) -> int:
    return sum(isinstance(m, AIMessage) for m in request.messages)


def _branch_work(request: Request) -> AIMessage:
    """Each branch: create two tasks, link them and take one seeded task; then report."""
    name = request.prompt.rsplit("# Your step\n", 1)[-1].split("\n", 1)[0]
    if name == "seed":
        if _turns(request) == 0:
            return calls(*(_create(f"seed {i}") for i in range(1, 4)))
        return text("seeded three tasks")
    number = BRANCHES.index(name) + 1
    if _turns(request) == 0:
        return calls(_create(f"{name} first"), _create(f"{name} second"))
    if _turns(request) == 1:
        return calls(
            ("TaskUpdate", {"taskId": "5", "addBlockedBy": ["4"]}),  # ids as this branch saw them
            ("TaskUpdate", {"taskId": str(number), "status": "in_progress", "owner": name}),
        )
    return text(f"{name} done")


@both_modes
def test_parallel_branches_creating_and_updating_tasks_lose_nothing(mode: Mode) -> None:
    steps = ["seed", *({"step": name, "depends_on": [1]} for name in BRANCHES)]
    model = FakeChatModel(
        planner=[call("plan", steps=steps)],
        executor=[_branch_work] * 11,
        replanner=[call("respond", response="all done")],
    )
    graph = build_plan_execute_graph(model, checkpointer=InMemorySaver(), task_tools="compact")
    run(graph, "Organise", mode, config=CONFIG, context=Context(replan="when_needed"))

    tasks = graph.get_state(CONFIG).values["tasks_context"]
    by_subject = {task.subject: task for task in tasks.tasks}
    assert sorted(int(task.id) for task in tasks.tasks) == list(range(1, 10))
    assert tasks.high_watermark == 9 and _edges_are_symmetric(tasks)
    for number, name in enumerate(BRANCHES, 1):
        first, second = by_subject[f"{name} first"], by_subject[f"{name} second"]
        assert second.blocked_by == [first.id] and first.blocks == [second.id]
        seeded = by_subject[f"seed {number}"]
        assert (seeded.status, seeded.owner) == ("in_progress", name)
    # The three branches ran in one wave, each from the same list of three seeded tasks.
    branch_prompts = [r.prompt for r in model.requests_of("executor") if _turns(r) == 0]
    assert sum("#3 [pending] seed 3" in prompt for prompt in branch_prompts) == 3
