"""The state-schema piece for graphs that host the task tools."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from replan.state.tasks import TaskContext


def as_task_context(value: Any) -> TaskContext:
    """Accept a TaskContext, its dict form (JSON input, API clients) or None (empty list)."""
    if value is None:
        return TaskContext()
    if isinstance(value, TaskContext):
        return value
    return TaskContext.model_validate(value)


def keep_last_task_context(current: Any, update: Any) -> TaskContext:
    """Reducer for `tasks_context`: the last write in a step wins.

    The task tools make that safe for parallel calls: each call replays the task calls that
    precede it in the same model turn, so the last one carries all of their effects.
    """
    return as_task_context(update)


class TasksState(TypedDict):
    """Add these keys to a graph's state to give its ToolNode the task tools."""

    messages: Annotated[list[AnyMessage], add_messages]
    tasks_context: Annotated[TaskContext, keep_last_task_context]
