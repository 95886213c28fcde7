"""The task tools as a model sees them: through LangGraph's prebuilt ToolNode."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode

from replan.state import TaskContext
from replan.tools import TasksState, task_tools
from replan.tools.task_descriptions import TOOL_DESCRIPTIONS


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
    create_tool = task_tools()[0]
    message = create_tool.invoke(
        {
            "type": "tool_call",
            "name": "TaskCreate",
            "id": "direct",
            "args": {"subject": "Solo", "description": "d", "state": {"messages": []}},
        }
    )
    assert message.update["messages"][0].content == "Task #1 created successfully: Solo"
    assert message.update["tasks_context"].get("1").subject == "Solo"


def test_state_given_as_an_object_with_attributes() -> None:
    class PydanticLikeState:
        messages: list[Any] = []
        tasks_context = TaskContext()

    command = task_tools()[0].invoke(
        call("TaskCreate", "o", subject="Obj", description="d", state=PydanticLikeState())
    )
    assert command.update["tasks_context"].get("1").subject == "Obj"


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
