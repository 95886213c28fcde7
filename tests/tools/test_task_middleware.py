"""TaskToolsMiddleware in `langchain.agents.create_agent`, alone and beside LangChain's own
middleware (summarisation, human-in-the-loop approval, model retry), with checkpointers."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    HumanInTheLoopMiddleware,
    ModelRetryMiddleware,
    SummarizationMiddleware,
)
from langchain_core.messages import AIMessage, SystemMessage
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from replan import (
    FileTaskStore,
    TaskContext,
    TaskToolsMiddleware,
    checkpoint_serializer,
    task_tools,
)
from replan.state import format_task_list, format_task_overview
from replan.testing import ScriptedOpenAIServer, http_error, tool_call, tool_calls
from replan.testing import text as server_text
from replan.tools.task_descriptions import TASK_LIST_PROMPT
from replan.tools.task_tools import TasksStateMissingError
from tests.support.fake_models import FakeChatModel, Request, calls, text

REPO = Path(__file__).resolve().parents[2]
TASK_TOOLS = ["TaskCreate", "TaskGet", "TaskUpdate", "TaskList"]


def creates(*subjects: str) -> AIMessage:
    """One model turn creating a task per subject, in parallel."""
    return calls(*[("TaskCreate", {"subject": s, "description": f"do {s}"}) for s in subjects])


def system_text(request: Request) -> str:
    """The system prompt of one recorded model call ('' when there is none)."""
    first = request.messages[0]
    return first.text if isinstance(first, SystemMessage) else ""


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def memory_saver() -> InMemorySaver:
    return InMemorySaver(serde=checkpoint_serializer())


def subjects(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(t.id, t.status, t.subject) for t in result["tasks_context"].sorted_tasks()]


# -- the tools, the state and the prompt ------------------------------------------------------


def test_the_middleware_adds_the_four_tools_and_the_task_list_to_the_state() -> None:
    model = FakeChatModel(executor=[creates("Collect"), text("done")])
    agent = create_agent(model, middleware=[TaskToolsMiddleware()])

    result = agent.invoke({"messages": [("user", "plan it")]})

    assert model.requests[0].tools == TASK_TOOLS
    assert subjects(result) == [("1", "pending", "Collect")]
    assert result["messages"][2].content == "Task #1 created successfully: Collect"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_parallel_task_calls_in_one_turn_act_one_after_another_in_order(mode: str) -> None:
    """Creates, a dependency on a task created in the same turn, a refused call and a read."""
    turn = calls(
        ("TaskCreate", {"subject": "Build", "description": ""}),
        ("TaskCreate", {"subject": "Test", "description": ""}),
        ("TaskUpdate", {"taskId": "2", "addBlockedBy": ["1"]}),
        ("TaskUpdate", {"taskId": "1", "addBlockedBy": ["2"]}),  # a cycle: refused
        ("TaskUpdate", {"taskId": "1", "status": "in_progress"}),
        ("TaskList", {}),
    )
    model = FakeChatModel(executor=[turn, text("done")])
    agent = create_agent(model, middleware=[TaskToolsMiddleware()])
    request = {"messages": [("user", "ship it")]}

    result = agent.invoke(request) if mode == "sync" else asyncio.run(agent.ainvoke(request))

    replies = [m for m in result["messages"] if m.type == "tool"]
    assert [r.status for r in replies] == ["success"] * 3 + ["error"] + ["success"] * 2
    assert replies[5].content == "#1 [in_progress] Build\n#2 [pending] Test [blocked by #1]"
    assert format_task_list(result["tasks_context"]) == replies[5].content
    # the next model call sees the same list in its system prompt
    assert "#2 [pending] Test [blocked by #1]" in system_text(model.requests[1])


def test_the_tools_without_the_middleware_fail_loudly_in_create_agent() -> None:
    """create_agent's default state has no `tasks_context`: the change would be dropped."""
    model = FakeChatModel(executor=[creates("Lost"), text("done")])
    agent = create_agent(model, tools=task_tools())
    with pytest.raises(TasksStateMissingError, match="TaskToolsMiddleware"):
        agent.invoke({"messages": [("user", "plan it")]})


def test_the_system_prompt_keeps_the_agents_own_text_and_adds_the_list() -> None:
    seed = TaskContext()
    seed.create("Collect the changes", "")
    model = FakeChatModel(executor=[text("ok")])
    agent = create_agent(
        model, system_prompt="You manage releases.", middleware=[TaskToolsMiddleware()]
    )

    agent.invoke({"messages": [("user", "status?")], "tasks_context": seed})

    prompt = system_text(model.requests[0])
    assert prompt.startswith("You manage releases.\n\n## Task list\n")
    assert prompt.endswith(
        "1 task: 0 in progress, 1 pending, 0 completed.\n#1 [pending] Collect the changes"
    )


def test_a_system_prompt_made_of_content_blocks_gets_one_more_block() -> None:
    model = FakeChatModel(executor=[text("ok")])
    own = SystemMessage(content=[{"type": "text", "text": "Be brief."}])
    agent = create_agent(model, system_prompt=own, middleware=[TaskToolsMiddleware()])

    agent.invoke({"messages": [("user", "hi")]})

    content = model.requests[0].messages[0].content
    assert isinstance(content, list) and content[0] == {"type": "text", "text": "Be brief."}
    (added,) = content[1:]
    assert added["text"].startswith("\n\n## Task list") and "No tasks yet" in added["text"]
    assert own.content == [{"type": "text", "text": "Be brief."}]  # the agent's own is unchanged


def test_the_prompt_section_follows_the_language_and_can_be_turned_off() -> None:
    model = FakeChatModel(executor=[text("ok"), text("ok")])
    create_agent(model, middleware=[TaskToolsMiddleware(language="zh")]).invoke(
        {"messages": [("user", "hi")]}
    )
    create_agent(model, middleware=[TaskToolsMiddleware(tasks_in_prompt=0)]).invoke(
        {"messages": [("user", "hi")]}
    )
    chinese, off = model.requests
    assert system_text(chinese).startswith(TASK_LIST_PROMPT["zh"].split("\n")[0])
    assert "任务列表" in system_text(chinese) and "No tasks yet" in system_text(chinese)
    assert system_text(off) == "" and off.tools == TASK_TOOLS
    with pytest.raises(ValueError, match="tasks_in_prompt"):
        TaskToolsMiddleware(tasks_in_prompt=-1)


def test_a_big_list_is_bounded_in_the_prompt_unfinished_tasks_first() -> None:
    seed = TaskContext()
    for n in range(1, 2001):
        seed.create(f"Task number {n} " + "x" * (300 if n == 1999 else 0), "")
    for done in range(1, 1991):
        seed.update(str(done), status="completed", clear_when_all_completed=False)
    seed.update("2000", status="in_progress")
    model = FakeChatModel(executor=[text("ok")])
    agent = create_agent(model, middleware=[TaskToolsMiddleware(tasks_in_prompt=12)])

    agent.invoke({"messages": [("user", "next?")], "tasks_context": seed})

    section = system_text(model.requests[0]).split("\n\n", 1)[1]
    lines = section.splitlines()
    assert lines[0] == "2000 tasks: 1 in progress, 9 pending, 1990 completed."
    shown = [line.split(" ")[0] for line in lines[1:-1]]
    # all 10 unfinished tasks, then the lowest-numbered completed ones, in ID order
    assert shown == ["#1", "#2", *(f"#{n}" for n in range(1991, 2001))]
    assert lines[-1] == "(1988 more not shown: TaskList shows all.)"
    assert max(len(line) for line in lines) == 200 and lines[-3].endswith("…")
    assert len(section) < 3000


def test_the_overview_is_the_full_list_when_it_fits() -> None:
    context = TaskContext()
    context.create("One", "")
    context.create("Two", "")
    context.update("2", add_blocked_by=["1"], owner="me")
    overview = format_task_overview(context, 5).splitlines()
    assert overview[1:] == format_task_list(context).splitlines()
    assert format_task_overview(TaskContext(), 5) == format_task_list(TaskContext())
    assert format_task_overview(context, 0).splitlines()[1:] == [
        "(2 more not shown: TaskList shows all.)"
    ]


# -- beside LangChain's own middleware --------------------------------------------------------


def summarising_run(server: ScriptedOpenAIServer, middleware: Any, turns: list[Any]) -> Any:
    """Run an agent through ChatOpenAI on the scripted server with summarisation after 6
    messages (the last 2 kept); returns the model requests the server saw."""
    summariser = FakeChatModel(executor=[text("SUMMARY: the user wants a release.")])
    summarisation = SummarizationMiddleware(
        summariser, trigger=("messages", 6), keep=("messages", 2)
    )
    model = ChatOpenAI(model="scripted-model", base_url=server.base_url, api_key="t", max_retries=0)
    server.push(*turns)
    agent = create_agent(model, middleware=[middleware, summarisation])
    agent.invoke({"messages": [("user", "Prepare the release")]})
    assert len(summariser.requests) == 1  # summarisation did happen
    return server.requests


def texts_of(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in request["messages"])


def test_the_list_stays_in_view_after_summarisation() -> None:
    turns = [
        tool_calls([("TaskCreate", {"subject": s, "description": ""}) for s in ("Tag", "Ship")]),
        tool_call("TaskUpdate", {"taskId": "1", "status": "in_progress"}),
        tool_call("TaskList", {}),
        server_text("Working on it."),
    ]
    with ScriptedOpenAIServer() as server:
        requests = summarising_run(server, TaskToolsMiddleware(), turns)
    last = requests[-1]
    assert "SUMMARY" in texts_of(last)
    assert "created successfully" not in texts_of(last)  # those tool results were summarised
    system = last["messages"][0]
    assert system["role"] == "system"
    assert "#1 [in_progress] Tag\n#2 [pending] Ship" in system["content"]


def test_todo_list_middleware_loses_the_list_from_view_after_summarisation() -> None:
    from langchain.agents.middleware import TodoListMiddleware

    todos = [{"content": "Tag the release", "status": "in_progress"}]
    turns = [
        tool_call("write_todos", {"todos": todos}),
        tool_call("write_todos", {"todos": todos}),
        tool_call("write_todos", {"todos": todos}),
        server_text("Working on it."),
    ]
    with ScriptedOpenAIServer() as server:
        requests = summarising_run(server, TodoListMiddleware(), turns)
    last = requests[-1]
    assert "SUMMARY" in texts_of(last)
    assert "Tag the release" in texts_of(requests[1])  # in view before summarisation
    assert texts_of(last).count("Tag the release") <= 1  # only the kept last tool message
    assert "Tag the release" not in last["messages"][0]["content"]  # not in the system prompt


DECISIONS = {
    "approve": {"type": "approve"},
    "reject": {"type": "reject", "message": "Not this one."},
    "edit": {
        "type": "edit",
        "edited_action": {"name": "TaskCreate", "args": {"subject": "Edited", "description": ""}},
    },
}


def review_first_create(interrupt_mode: str) -> HumanInTheLoopMiddleware:
    """Human review of the TaskCreate call whose subject is "First" (and of no other call)."""
    return HumanInTheLoopMiddleware(
        interrupt_on={
            "TaskCreate": {
                "allowed_decisions": ["approve", "edit", "reject"],
                "when": lambda call: call.tool_call["args"]["subject"] == "First",
            }
        },
        interrupt_mode=interrupt_mode,
    )


@pytest.mark.parametrize(
    ("interrupt_mode", "decision", "expected"),
    [
        ("batched", "approve", [("1", "First"), ("2", "Second")]),
        ("batched", "edit", [("1", "Edited"), ("2", "Second")]),
        # batched: the refusal is known before any call runs, so "Second" is #1
        ("batched", "reject", [("1", "Second")]),
        ("per_call", "approve", [("1", "First"), ("2", "Second")]),
        ("per_call", "edit", [("1", "Edited"), ("2", "Second")]),
        # per_call: "Second" ran (as #2) while "First" waited; IDs are never reused
        ("per_call", "reject", [("2", "Second")]),
    ],
)
def test_human_review_of_one_of_two_parallel_calls_keeps_what_really_ran(
    interrupt_mode: str, decision: str, expected: list[tuple[str, str]]
) -> None:
    model = FakeChatModel(executor=[creates("First", "Second"), text("done")])
    agent = create_agent(
        model,
        middleware=[TaskToolsMiddleware(), review_first_create(interrupt_mode)],
        checkpointer=memory_saver(),
    )
    paused = agent.invoke({"messages": [("user", "plan")]}, thread("review"))
    (pending,) = paused["__interrupt__"]
    answer: Any = DECISIONS[decision]
    if interrupt_mode == "batched":
        assert pending.value["action_requests"][0]["args"]["subject"] == "First"
        answer = {"decisions": [answer]}
    else:
        assert pending.value["args"]["subject"] == "First"

    result = agent.invoke(Command(resume=answer), thread("review"))

    assert [(t.id, t.subject) for t in result["tasks_context"].sorted_tasks()] == expected
    replies = {m.content for m in result["messages"] if m.type == "tool"}
    second_id = expected[-1][0]
    assert f"Task #{second_id} created successfully: Second" in replies  # as the list says


def test_a_reviewed_call_resumed_later_is_still_applied_before_the_later_calls() -> None:
    """Call 1 waits for review while call 2 runs: the list ends as call 1 then call 2."""
    turn = calls(
        ("TaskUpdate", {"taskId": "1", "subject": "From call 1", "owner": "reviewer"}),
        ("TaskUpdate", {"taskId": "1", "subject": "From call 2"}),
    )
    model = FakeChatModel(executor=[turn, text("done")])
    review = HumanInTheLoopMiddleware(
        interrupt_on={
            "TaskUpdate": {
                "allowed_decisions": ["approve"],
                "when": lambda call: "owner" in call.tool_call["args"],
            }
        },
        interrupt_mode="per_call",
    )
    agent = create_agent(
        model, middleware=[TaskToolsMiddleware(), review], checkpointer=memory_saver()
    )
    seed = TaskContext()
    seed.create("Original", "")
    paused = agent.invoke({"messages": [("user", "go")], "tasks_context": seed}, thread("t"))
    (pending,) = paused["__interrupt__"]
    assert pending.value["args"]["subject"] == "From call 1"

    result = agent.invoke(Command(resume={"type": "approve"}), thread("t"))

    task = result["tasks_context"].get("1")
    assert (task.subject, task.owner) == ("From call 2", "reviewer")


def test_a_retried_model_call_still_shows_the_list() -> None:
    seed = TaskContext()
    seed.create("Collect the changes", "")
    with ScriptedOpenAIServer() as server:
        server.push(
            http_error(500, "overloaded"),
            tool_call("TaskUpdate", {"taskId": "1", "status": "completed"}),
            server_text("All done."),
        )
        model = ChatOpenAI(
            model="scripted-model", base_url=server.base_url, api_key="t", max_retries=0
        )
        retry = ModelRetryMiddleware(max_retries=2, initial_delay=0, jitter=False)
        agent = create_agent(
            model, middleware=[retry, TaskToolsMiddleware(clear_when_all_completed=False)]
        )
        result = agent.invoke({"messages": [("user", "finish")], "tasks_context": seed})
        requests = server.requests
    assert len(requests) == 3 and result["messages"][-1].content == "All done."
    first, retried, after = (r["messages"][0]["content"] for r in requests)
    assert first == retried and "#1 [pending] Collect the changes" in retried
    assert "#1 [completed] Collect the changes" in after
    assert subjects(result) == [("1", "completed", "Collect the changes")]


# -- checkpoints and shared folders -----------------------------------------------------------


def sqlite_agent(path: Path, model: FakeChatModel, **kwargs: Any) -> tuple[Any, sqlite3.Connection]:
    connection = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(connection, serde=checkpoint_serializer())
    return create_agent(model, checkpointer=saver, **kwargs), connection


def test_the_list_is_checkpointed_and_a_new_agent_resumes_it(tmp_path: Path) -> None:
    db = tmp_path / "agent.sqlite"
    first_model = FakeChatModel(executor=[creates("Draft", "Review"), text("planned")])
    agent, connection = sqlite_agent(db, first_model, middleware=[TaskToolsMiddleware()])
    agent.invoke({"messages": [("user", "write the post")]}, thread("post"))
    connection.close()

    second_model = FakeChatModel(
        executor=[calls(("TaskUpdate", {"taskId": "1", "status": "in_progress"})), text("ok")]
    )
    agent, connection = sqlite_agent(db, second_model, middleware=[TaskToolsMiddleware()])
    result = agent.invoke({"messages": [("user", "go on")]}, thread("post"))
    connection.close()

    assert "#1 [pending] Draft\n#2 [pending] Review" in system_text(second_model.requests[0])
    assert subjects(result) == [("1", "in_progress", "Draft"), ("2", "pending", "Review")]


def test_a_paused_turn_resumes_from_the_checkpoint_in_a_new_agent(tmp_path: Path) -> None:
    """Call 2's change waits in the checkpoint's pending writes while call 1 is reviewed."""
    db = tmp_path / "agent.sqlite"

    def reviewed(model: FakeChatModel) -> tuple[Any, sqlite3.Connection]:
        middleware = [TaskToolsMiddleware(), review_first_create("per_call")]
        return sqlite_agent(db, model, middleware=middleware)

    agent, connection = reviewed(FakeChatModel(executor=[creates("First", "Second")]))
    paused = agent.invoke({"messages": [("user", "plan")]}, thread("t"))
    assert paused["__interrupt__"]
    connection.close()

    agent, connection = reviewed(FakeChatModel(executor=[text("done")]))
    result = agent.invoke(Command(resume=DECISIONS["edit"]), thread("t"))
    connection.close()
    assert subjects(result) == [("1", "pending", "Edited"), ("2", "pending", "Second")]


CHILD = """
import sys
from langchain.agents import create_agent
from replan import TaskToolsMiddleware
from tests.support.fake_models import FakeChatModel, calls, text

turns = [calls(("TaskCreate", {"subject": s, "description": ""})) for s in ("Fetch", "Parse")]
model = FakeChatModel(executor=[*turns, text("done")])
agent = create_agent(model, middleware=[TaskToolsMiddleware(store=sys.argv[1])])
agent.invoke({"messages": [("user", "plan")]})
"""


@pytest.mark.slow
def test_agents_in_two_processes_share_one_list_through_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "team-tasks"
    subprocess.run([sys.executable, "-c", CHILD, str(folder)], cwd=REPO, check=True)

    model = FakeChatModel(
        executor=[calls(("TaskUpdate", {"taskId": "2", "owner": "parent"})), text("ok")]
    )
    agent = create_agent(model, middleware=[TaskToolsMiddleware(store=folder)])
    result = agent.invoke({"messages": [("user", "help out")]})

    assert "#1 [pending] Fetch\n#2 [pending] Parse" in system_text(model.requests[0])
    assert "#2 [pending] Parse [owner: parent]" in system_text(model.requests[1])
    assert FileTaskStore(folder).read().get("2").owner == "parent"
    assert "tasks_context" not in result  # the folder holds the list, not the state


def test_a_shared_folder_agent_runs_under_ainvoke(tmp_path: Path) -> None:
    model = FakeChatModel(executor=[creates("Fetch", "Parse"), text("ok")])
    agent = create_agent(model, middleware=[TaskToolsMiddleware(store=tmp_path)])

    asyncio.run(agent.ainvoke({"messages": [("user", "plan")]}))

    assert sorted(t.subject for t in FileTaskStore(tmp_path).read().tasks) == ["Fetch", "Parse"]
    assert "2 tasks: 0 in progress, 2 pending" in system_text(model.requests[1])


# -- how LangChain's TodoListMiddleware compares ------------------------------------------------


def test_todo_items_have_no_id_and_no_dependencies() -> None:
    from typing import get_type_hints

    from langchain.agents.middleware.todo import Todo

    assert set(get_type_hints(Todo)) == {"content", "status"}


def test_todo_list_middleware_refuses_parallel_writes() -> None:
    from langchain.agents.middleware import TodoListMiddleware

    todo = {"content": "Tag", "status": "pending"}
    turn = calls(("write_todos", {"todos": [todo]}), ("write_todos", {"todos": [todo]}))
    model = FakeChatModel(executor=[turn, text("done")])
    result = create_agent(model, middleware=[TodoListMiddleware()]).invoke(
        {"messages": [("user", "plan")]}
    )
    replies = [m for m in result["messages"] if m.type == "tool"]
    assert [r.status for r in replies] == ["error", "error"]
    assert not result.get("todos")


def test_todo_list_middleware_drops_an_item_left_out_of_a_rewrite() -> None:
    from langchain.agents.middleware import TodoListMiddleware

    both = [{"content": "Tag", "status": "pending"}, {"content": "Ship", "status": "pending"}]
    started = [{"content": "Tag", "status": "in_progress"}]  # "Ship" forgotten
    model = FakeChatModel(
        executor=[
            calls(("write_todos", {"todos": both})),
            calls(("write_todos", {"todos": started})),
            text("done"),
        ]
    )
    result = create_agent(model, middleware=[TodoListMiddleware()]).invoke(
        {"messages": [("user", "plan")]}
    )
    assert result["todos"] == started


def test_task_updates_change_only_the_named_task() -> None:
    turns = [
        creates("Tag", "Ship"),
        calls(("TaskUpdate", {"taskId": "1", "status": "in_progress"})),
        calls(("TaskUpdate", {"taskId": "2", "status": "started"})),  # not a status
        text("done"),
    ]
    model = FakeChatModel(executor=turns)
    result = create_agent(model, middleware=[TaskToolsMiddleware()]).invoke(
        {"messages": [("user", "plan")]}
    )
    assert subjects(result) == [("1", "in_progress", "Tag"), ("2", "pending", "Ship")]
    refused = result["messages"][-2]
    assert refused.status == "error" and "in_progress" in refused.content


def test_todo_lists_stay_in_their_own_thread() -> None:
    from langchain.agents.middleware import TodoListMiddleware

    todo = [{"content": "Tag", "status": "pending"}]
    model = FakeChatModel(executor=[calls(("write_todos", {"todos": todo})), text("a"), text("b")])
    agent = create_agent(model, middleware=[TodoListMiddleware()], checkpointer=memory_saver())
    agent.invoke({"messages": [("user", "plan")]}, thread("one"))
    other = agent.invoke({"messages": [("user", "what is planned?")]}, thread("two"))
    assert agent.get_state(thread("one")).values["todos"] == todo
    assert not other.get("todos")
