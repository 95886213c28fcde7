"""One task list, changed by executor branches that run at the same time.

Every branch of a wave starts from the same `tasks_context`. Its final list would overwrite the
other branches' work, so a branch sends a `TaskReplay` instead: the task tool calls that changed
its list, in order, and the highest task ID that existed when it started. The
`merge_task_updates` reducer replays each branch's calls onto the merged list, branch after
branch in task order, giving the tasks a branch created the next free IDs (and pointing that
branch's later references at them). The result is what running the branches one after another
would have given: IDs unique and never reused, both sides of every edge written, nothing lost.
A replayed call that the merged list refuses (say, an update of a task another branch deleted)
is dropped. Anything else written to the channel is handled as `TasksState` handles it
(`update_task_context`: a task call's change is applied, a whole `TaskContext` replaces the
list). A replay is plain data (a dict), so any checkpoint serializer stores it.

A graph whose task tools work on a shared `TaskStore` has no branch lists to merge: the store
orders the calls of every branch and every run. Its nodes read the list with
`read_shared_tasks` (a `Call`, so an async run reads it off the event loop).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from pydantic import ValidationError
from typing_extensions import TypedDict

from replan.graphs.calls import Call
from replan.state.task_stores import TaskStore
from replan.state.tasks import TaskContext, TaskError, parse_task_id
from replan.tools.task_state import as_task_context, update_task_context
from replan.tools.task_tools import TASK_CREATE, TASK_UPDATE, run_task_call

CHANGING_TASK_TOOLS = (TASK_CREATE, TASK_UPDATE)
ID_ARGUMENTS = ("taskId",)
ID_LIST_ARGUMENTS = ("addBlocks", "addBlockedBy")


class TaskCall(TypedDict):
    """One task tool call as the model made it."""

    name: str
    args: dict[str, Any]


class TaskReplay(TypedDict):
    """The task-list changes of one branch, to be replayed onto the merged list."""

    task_calls: list[TaskCall]
    created_after: int
    """The highest task ID in the list the branch started from; higher IDs it created."""
    clear_when_all_completed: bool


def highest_task_id(context: TaskContext) -> int:
    """The highest ID ever handed out in `context` (the next task gets the one after)."""
    return max(context.high_watermark, context.tasks.highest_id())


def applied_task_calls(messages: Sequence[AnyMessage]) -> list[TaskCall]:
    """The calls in `messages` that changed the task list: TaskCreate / TaskUpdate calls whose
    reply is not an error, in the order they ran."""
    failed = {
        m.tool_call_id for m in messages if isinstance(m, ToolMessage) and m.status == "error"
    }
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    return [
        {"name": call["name"], "args": dict(call["args"])}
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
        if call["name"] in CHANGING_TASK_TOOLS
        and call["id"] in answered
        and call["id"] not in failed
    ]


def task_replay(
    start: TaskContext, messages: Sequence[AnyMessage], *, clear_when_all_completed: bool = True
) -> TaskReplay | None:
    """What a branch that started from `start` and ran `messages` changed; None if nothing."""
    calls = applied_task_calls(messages)
    if not calls:
        return None
    return {
        "task_calls": calls,
        "created_after": highest_task_id(start),
        "clear_when_all_completed": clear_when_all_completed,
    }


def _renumbered(value: Any, created_after: int, new_ids: Mapping[str, str]) -> Any:
    """`value` with a task ID the branch created replaced by the ID it got in the merge."""
    try:
        task_id = parse_task_id(value)
    except TaskError:
        return value  # the call failed in its branch too, and is not in the replay
    return new_ids.get(task_id, task_id) if int(task_id) > created_after else task_id


def replay_task_calls(context: TaskContext, replay: TaskReplay) -> TaskContext:
    """`context` with the branch's calls applied in order (refused calls are dropped)."""
    merged = context.clone()
    created_after = replay["created_after"]
    new_ids: dict[str, str] = {}
    created = created_after
    for call in replay["task_calls"]:
        args = dict(call["args"])
        for key in ID_ARGUMENTS:
            if key in args:
                args[key] = _renumbered(args[key], created_after, new_ids)
        for key in ID_LIST_ARGUMENTS:
            if isinstance(args.get(key), list):
                args[key] = [_renumbered(v, created_after, new_ids) for v in args[key]]
        if call["name"] == TASK_CREATE:
            created += 1
        try:
            run_task_call(
                merged,
                call["name"],
                args,
                clear_when_all_completed=replay["clear_when_all_completed"],
            )
        except (TaskError, ValidationError):
            continue
        if call["name"] == TASK_CREATE:
            new_ids[str(created)] = str(highest_task_id(merged))
    return merged


def is_task_replay(value: Any) -> bool:
    """Whether a `tasks_context` write is a branch's replay rather than a whole list."""
    return isinstance(value, Mapping) and "task_calls" in value


def merge_task_updates(current: Any, update: Any) -> TaskContext:
    """Reducer for `tasks_context` in the plan–execute graph: replay a branch's `TaskReplay`
    onto the current list; anything else as `update_task_context` takes it."""
    if is_task_replay(update):
        return replay_task_calls(as_task_context(current), update)
    return update_task_context(current, update)


def read_shared_tasks(store: TaskStore) -> Call:
    """A node step that reads the list kept in `store` (it returns a `TaskContext`)."""
    return Call(RunnableLambda(lambda _: store.read(), name="read_task_list"), None)
