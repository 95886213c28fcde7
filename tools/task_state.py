"""The state-schema piece for graphs that host the task tools."""

from __future__ import annotations

from typing import Annotated, Any, NotRequired, Protocol, runtime_checkable

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from langgraph.managed import RemainingSteps
from typing_extensions import TypedDict

from replan.state.tasks import TaskContext


@runtime_checkable
class TaskContextChange(Protocol):
    """A change a task tool writes to `tasks_context` instead of a whole list."""

    def apply_to(self, context: TaskContext) -> TaskContext:
        """The list after this change; `context` itself is left as it was."""
        ...


def as_task_context(value: Any) -> TaskContext:
    """Accept a TaskContext, its dict form (JSON input, API clients) or None (empty list).

    A dict with other keys is refused rather than read as an empty list (a checkpoint
    serializer that blocks `TaskCallChange` hands its fields back as such a dict).
    """
    if value is None:
        return TaskContext()
    if isinstance(value, TaskContext):
        return value
    if isinstance(value, dict) and (unknown := set(value) - set(TaskContext.model_fields)):
        raise ValueError(
            f"Not a task list: unexpected keys {sorted(unknown)}. If a checkpoint saver gave "
            "this back, give it serde=replan.checkpoint_serializer()."
        )
    return TaskContext.model_validate(value)


def update_task_context(current: Any, update: Any) -> TaskContext:
    """Reducer for `tasks_context`: a task tool's change is applied to the list; a whole list
    (a `TaskContext`, its dict form, or None) replaces it.

    LangGraph hands the reducer the writes of one step in task order, which for the task calls
    of one model turn is call order: parallel calls end as if they ran one after another, with
    the arguments they actually ran with (a middleware may have edited or refused some).
    """
    if isinstance(update, TaskContextChange):
        return update.apply_to(as_task_context(current))
    return as_task_context(update)


class TasksState(TypedDict):
    """Add these keys to a graph's state to give its ToolNode the task tools."""

    messages: Annotated[list[AnyMessage], add_messages]
    tasks_context: Annotated[TaskContext, update_task_context]


class ReactTasksState(TasksState):
    """`TasksState` for LangGraph's prebuilt `create_react_agent(..., state_schema=...)`, which
    also needs the managed `remaining_steps` value (the one line to add to a state of your own)."""

    remaining_steps: NotRequired[RemainingSteps]
