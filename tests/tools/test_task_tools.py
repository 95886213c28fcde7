"""The task tools as a model sees them: through LangGraph's prebuilt ToolNode."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph, add_messages
from langgraph.prebuilt import ToolNode, create_react_agent
from langgraph.prebuilt.tool_node import ToolCallRequest
from typing_extensions import TypedDict

from replan.state import TaskContext
from replan.tools import ReactTasksState, TasksState, task_tools
from replan.tools.task_descriptions import TOOL_DESCRIPTIONS
from replan.tools.task_state import update_task_context
from replan.tools.task_tools import TaskCallChange, TasksStateMissingError
from tests.support.fake_models import FakeChatModel


def call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args, "id": call_id}


def run_turn(
    calls: list[dict[str, Any]], context: TaskContext | None = None, **tool_options: Any
) -> tuple[list[ToolMessage], TaskContext]:
    """Send one model turn with these tool calls through a ToolNode graph."""
    builder = StateGraph(TasksState)
    builder.add_node("tools", ToolNode(task_tools(**tool_options)))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    state: dict[str, Any] = {"messages": [AIMessage("", tool_calls=calls)]}
    if context is not None:
        state["tasks_context"] = context
    out = builder.compile().invoke(state)
    replies = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    return replies, out["tasks_context"]


def create(n: int) -> dict[str, Any]:
    return call("TaskCreate", f"create-{n}", subject=f"Step {n}", description=f"Do step {n}")


def test_tool_names_and_model_visible_arguments() -> None:
    schemas = {t.name: t.tool_call_schema.model_json_schema() for t in task_tools()}
    assert list(schemas) == ["TaskCreate", "TaskGet", "TaskUpdate", "TaskList"]
    assert set(schemas["TaskCreate"]["properties"]) == {
        "subject",
        "description",
        "activeForm",
        "metadata",
    }
    assert set(schemas["TaskGet"]["properties"]) == {"taskId"}
    assert set(schemas["TaskUpdate"]["properties"]) == {
        "taskId",
        "subject",
        "description",
        "activeForm",
        "status",
        "addBlocks",
        "addBlockedBy",
        "owner",
        "metadata",
    }
    assert schemas["TaskList"].get("properties", {}) == {}
    # the injected state and call id never reach the model
    assert all("state" not in s.get("properties", {}) for s in schemas.values())


def test_create_replies_with_the_new_id_and_subject() -> None:
    replies, context = run_turn([create(1)])
    assert replies[0].content == "Task #1 created successfully: Step 1"
    assert replies[0].status == "success"
    assert context.get("1").status == "pending"


def test_parallel_creates_in_one_turn_lose_nothing_and_keep_call_order() -> None:
    replies, context = run_turn([create(1), create(2), create(3)])
    assert [r.content for r in replies] == [
        f"Task #{n} created successfully: Step {n}" for n in (1, 2, 3)
    ]
    assert [(t.id, t.subject) for t in context.sorted_tasks()] == [
        ("1", "Step 1"),
        ("2", "Step 2"),
        ("3", "Step 3"),
    ]


def test_a_turn_mixing_creates_updates_reads_and_a_failure_acts_sequentially() -> None:
    calls = [
        create(1),
        create(2),
        call("TaskUpdate", "link", taskId="2", addBlockedBy=["1"]),
        call("TaskUpdate", "bad", taskId="1", addBlockedBy=["2"]),  # would close a cycle
        call("TaskList", "list"),
        call("TaskUpdate", "start", taskId=1, status="in_progress"),  # numeric ID accepted
    ]
    replies, context = run_turn(calls)
    statuses = [r.status for r in replies]
    assert statuses == ["success", "success", "success", "error", "success", "success"]
    assert replies[4].content == "#1 [pending] Step 1\n#2 [pending] Step 2 [blocked by #1]"
    assert context.get("1").status == "in_progress"
    assert context.get("1").blocks == ["2"] and context.get("1").blocked_by == []


@pytest.mark.parametrize("call_id", ["same", ""])
def test_repeated_or_empty_call_ids_are_told_apart_by_position(call_id: str) -> None:
    """Some servers repeat one id (or send none) for every call of a turn."""
    calls = [
        call("TaskCreate", call_id, subject="Step 1", description="d"),
        call("TaskCreate", call_id, subject="Step 2", description="d"),
        call("TaskUpdate", call_id, taskId="2", addBlockedBy=["1"]),
        call("TaskCreate", call_id, subject="Step 3", description="d"),
        call("TaskList", call_id),
    ]
    replies, context = run_turn(calls)
    assert [r.content for r in replies[:2]] == [
        "Task #1 created successfully: Step 1",
        "Task #2 created successfully: Step 2",
    ]
    assert replies[3].content == "Task #3 created successfully: Step 3"
    assert replies[4].content.splitlines() == [
        "#1 [pending] Step 1",
        "#2 [pending] Step 2 [blocked by #1]",
        "#3 [pending] Step 3",
    ]
    assert [t.id for t in context.sorted_tasks()] == ["1", "2", "3"]
    assert context.get("2").blocked_by == ["1"]


def test_identical_copies_of_a_call_all_run_and_each_reports_every_copy() -> None:
    """Copies with the same id, name and arguments cannot be told apart: each reply covers all."""
    twin = call("TaskCreate", "", subject="Same", description="d")
    calls = [twin, call("TaskUpdate", "", taskId="1", status="deleted"), twin, twin]
    replies, context = run_turn(calls)
    assert [t.id for t in context.sorted_tasks()] == ["2", "3"]
    assert replies[1].content.startswith("Task #1 deleted")
    for reply in (replies[0], replies[2], replies[3]):
        assert reply.status == "success"
        assert "sent 3 times" in reply.content
        assert [line for line in reply.content.splitlines() if "Task #" in line] == [
            f"{n}. Task #{n} created successfully: Same" for n in (1, 2, 3)
        ]


def test_with_repeated_ids_replies_count_off_the_calls_in_order() -> None:
    """A graph answering calls one at a time: one reply to id "" answers the first "" call."""
    seeded = TaskContext()
    seeded.create("Step 1", "Do step 1")
    calls = [
        call("TaskCreate", "", subject="Step 1", description="Do step 1"),
        call("TaskCreate", "", subject="Step 2", description="Do step 2"),
    ]
    answered = ToolMessage("Task #1 created successfully: Step 1", tool_call_id="")
    state = {"messages": [AIMessage("", tool_calls=calls), answered], "tasks_context": seeded}
    command = task_tools()[0].invoke({**calls[1], "args": {**calls[1]["args"], "state": state}})
    assert command.update["messages"][0].content == "Task #2 created successfully: Step 2"
    after = command.update["tasks_context"].apply_to(seeded)
    assert [t.subject for t in after.tasks] == ["Step 1", "Step 2"]


def test_calls_already_answered_are_not_replayed() -> None:
    """A graph that runs calls one at a time has the earlier results in state already."""
    first_context = TaskContext()
    first_context.create("Step 1", "Do step 1")
    calls = [create(1), create(2)]
    builder = StateGraph(TasksState)
    builder.add_node("tools", ToolNode(task_tools()))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    answered = ToolMessage("Task #1 created successfully: Step 1", tool_call_id="create-1")
    ai = AIMessage("", tool_calls=calls)
    out = builder.compile().invoke(
        {"messages": [ai, answered, AIMessage("", tool_calls=[calls[1]], id="second")]}
        | {"tasks_context": first_context}
    )
    assert [t.id for t in out["tasks_context"].tasks] == ["1", "2"]


def test_errors_come_back_as_error_tool_messages_and_change_nothing() -> None:
    seeded = TaskContext()
    seeded.create("Only", "one")
    calls = [
        call("TaskCreate", "e1", subject="", description="x"),
        call("TaskGet", "e2", taskId="../x"),
        call("TaskUpdate", "e3", taskId="42", status="completed"),
        call("TaskUpdate", "e4", taskId="1", status="finished"),
        call("TaskUpdate", "e5", taskId="1", addBlocks=["1"]),
        call("TaskCreate", "e6", description="no subject"),
    ]
    replies, context = run_turn(calls, seeded)
    assert [r.status for r in replies] == ["error"] * 6
    assert "subject" in replies[0].content
    assert "not a task ID" in replies[1].content and "TaskList" in replies[1].content
    assert "#42 does not exist" in replies[2].content
    for value in ("pending", "in_progress", "completed", "deleted"):
        assert value in replies[3].content
    assert "itself" in replies[4].content
    assert "subject" in replies[5].content and "call again" in replies[5].content
    assert context.model_dump() == seeded.model_dump()


def test_get_and_update_and_delete_through_the_tools() -> None:
    calls = [
        create(1),
        create(2),
        call("TaskUpdate", "u", taskId="1", owner="planner", metadata={"k": "v"}, addBlocks=["2"]),
        call("TaskGet", "g", taskId="1"),
        call("TaskUpdate", "d", taskId="1", status="deleted"),
        call("TaskGet", "g2", taskId="2"),
    ]
    replies, context = run_turn(calls)
    assert "Owner: planner" in replies[3].content and "Blocks: #2" in replies[3].content
    assert "deleted" in replies[4].content
    assert "Blocked by: none" in replies[5].content
    assert [t.id for t in context.tasks] == ["2"]


def test_completing_everything_clears_the_list_unless_turned_off() -> None:
    calls = [create(1), call("TaskUpdate", "done", taskId="1", status="completed")]
    replies, context = run_turn(calls)
    assert "cleared" in replies[1].content and context.tasks == []
    assert context.high_watermark == 1
    _, kept = run_turn(calls, clear_when_all_completed=False)
    assert kept.get("1").status == "completed"


def test_tool_called_directly_with_injected_state() -> None:
    """Called by hand, a tool answers with a Command: the reply, and its change to the list."""
    create_tool = task_tools()[0]
    seeded = TaskContext()
    seeded.create("Existing", "")
    state = {"messages": [], "tasks_context": seeded}
    command = create_tool.invoke(
        call("TaskCreate", "direct", subject="Solo", description="d", state=state)
    )
    assert command.update["messages"][0].content == "Task #2 created successfully: Solo"
    change = command.update["tasks_context"]
    assert isinstance(change, TaskCallChange)
    after = change.apply_to(seeded)
    assert [(t.id, t.subject) for t in after.sorted_tasks()] == [("1", "Existing"), ("2", "Solo")]
    assert [t.id for t in seeded.tasks] == ["1"]  # applying leaves the given list alone


def test_state_given_as_an_object_with_attributes() -> None:
    class PydanticLikeState:
        messages: list[Any] = []
        tasks_context = TaskContext()

    command = task_tools()[0].invoke(
        call("TaskCreate", "o", subject="Obj", description="d", state=PydanticLikeState())
    )
    assert command.update["tasks_context"].apply_to(TaskContext()).get("1").subject == "Obj"


@pytest.mark.parametrize("language", ["en", "zh"])
def test_descriptions_per_language_say_when_not_to_plan(language: str) -> None:
    tools = task_tools(language=language)  # type: ignore[arg-type]
    assert [t.description for t in tools] == list(TOOL_DESCRIPTIONS[language].values())  # type: ignore[index]
    create_text = tools[0].description
    if language == "en":
        assert "three or more" in create_text and "Skip tasks" in create_text
    else:
        assert "三个" in create_text and "不要创建任务" in create_text
        field = tools[0].tool_call_schema.model_json_schema()["properties"]["subject"]
        assert "标题" in field["description"]


def test_english_is_the_default_and_unknown_languages_are_refused() -> None:
    assert task_tools()[0].description == TOOL_DESCRIPTIONS["en"]["TaskCreate"]
    with pytest.raises(ValueError, match="en, zh"):
        task_tools(language="fr")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["TaskCreate", "TaskList"])
def test_a_graph_without_a_tasks_channel_fails_loudly_instead_of_dropping_changes(
    name: str,
) -> None:
    """LangGraph ignores updates to channels a state does not have: refuse to run there."""
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(task_tools()))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    args = {"subject": "Lost", "description": ""} if name == "TaskCreate" else {}
    turn = AIMessage("", tool_calls=[call(name, "c1", **args)])
    with pytest.raises(TasksStateMissingError) as refused:
        builder.compile().invoke({"messages": [turn]})
    message = str(refused.value)
    assert message.startswith(f"{name} cannot keep tasks here")
    for fix in ("replan.TasksState", "TaskToolsMiddleware", "FileTaskStore"):
        assert fix in message


def test_a_tasks_channel_declared_without_the_reducer_is_refused_too() -> None:
    class PlainState(TypedDict):
        messages: Annotated[list[AnyMessage], add_messages]
        tasks_context: TaskContext  # no reducer: unset until written

    builder = StateGraph(PlainState)
    builder.add_node("tools", ToolNode(task_tools()))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    with pytest.raises(TasksStateMissingError, match="reducer"):
        builder.compile().invoke({"messages": [AIMessage("", tool_calls=[create(1)])]})


def test_create_react_agent_needs_the_react_state_and_works_with_it() -> None:
    turn = AIMessage("", tool_calls=[create(1), create(2)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated for create_agent
        bare = create_react_agent(FakeChatModel(executor=[turn]), task_tools())
        agent = create_react_agent(
            FakeChatModel(executor=[turn, AIMessage("done")]),
            task_tools(),
            state_schema=ReactTasksState,
        )
    with pytest.raises(TasksStateMissingError):
        bare.invoke({"messages": [("user", "plan")]})
    result = agent.invoke({"messages": [("user", "plan")]})
    assert [t.subject for t in result["tasks_context"].sorted_tasks()] == ["Step 1", "Step 2"]


def test_a_whole_list_written_to_the_channel_replaces_it_and_other_dicts_are_refused() -> None:
    seeded = TaskContext()
    seeded.create("Kept", "")
    assert update_task_context(TaskContext(), seeded.model_dump()).get("1").subject == "Kept"
    assert update_task_context(seeded, None).tasks == []
    with pytest.raises(ValueError, match="checkpoint_serializer"):
        update_task_context(seeded, {"name": "TaskCreate", "args": {}})


def test_changes_a_tool_wrapper_makes_are_what_the_list_keeps() -> None:
    """A ToolNode wrapper refuses the first call and edits the second: the list shows exactly
    what ran, and the untouched third call keeps the ID its reply announced."""

    def review(request: ToolCallRequest, execute: Callable[..., Any]) -> Any:
        if request.tool_call["id"] == "create-1":
            return ToolMessage("Refused by review.", tool_call_id="create-1", status="error")
        if request.tool_call["id"] == "create-2":
            edited = {**request.tool_call["args"], "subject": "Edited"}
            return execute(request.override(tool_call={**request.tool_call, "args": edited}))
        return execute(request)

    builder = StateGraph(TasksState)
    builder.add_node("tools", ToolNode(task_tools(), wrap_tool_call=review))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    out = builder.compile().invoke(
        {"messages": [AIMessage("", tool_calls=[create(1), create(2), create(3)])]}
    )
    replies = [m.content for m in out["messages"] if isinstance(m, ToolMessage)]
    assert replies[2] == "Task #3 created successfully: Step 3"
    assert [(t.id, t.subject) for t in out["tasks_context"].sorted_tasks()] == [
        ("2", "Edited"),
        ("3", "Step 3"),
    ]
