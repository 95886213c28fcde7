"""Typed data and pure operations: tasks, graph state schemas, plan documents.

The task and plan modules are plain Python. The graph state schemas (`TasksState`,
`PlanExecuteState`, ...) need LangGraph, so they load on first use: importing `state` or
`state.plans` alone stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from state.task_store import FileTaskStore, TaskStoreCorruptError
from state.task_views import format_task_details, format_task_list
from state.tasks import (
    TASK_STATUSES,
    UPDATE_STATUSES,
    Task,
    TaskContext,
    TaskError,
    TaskStatus,
    TaskUpdateResult,
    find_cycle,
    parse_task_id,
)

if TYPE_CHECKING:
    from state.plan_execute import (
        ExecutedStep,
        PlanExecuteInput,
        PlanExecuteOutput,
        PlanExecuteState,
    )
    from state.tasks_state import TasksState, as_task_context, keep_last_task_context

_GRAPH_STATE_MODULES = {
    "ExecutedStep": "state.plan_execute",
    "PlanExecuteInput": "state.plan_execute",
    "PlanExecuteOutput": "state.plan_execute",
    "PlanExecuteState": "state.plan_execute",
    "TasksState": "state.tasks_state",
    "as_task_context": "state.tasks_state",
    "keep_last_task_context": "state.tasks_state",
}


def __getattr__(name: str) -> Any:
    """Load the LangGraph-backed state schemas on first access."""
    if name not in _GRAPH_STATE_MODULES:
        raise AttributeError(f"module 'state' has no attribute {name!r}")
    value = getattr(importlib.import_module(_GRAPH_STATE_MODULES[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "TASK_STATUSES",
    "UPDATE_STATUSES",
    "ExecutedStep",
    "FileTaskStore",
    "PlanExecuteInput",
    "PlanExecuteOutput",
    "PlanExecuteState",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskStatus",
    "TaskStoreCorruptError",
    "TaskUpdateResult",
    "TasksState",
    "as_task_context",
    "find_cycle",
    "format_task_details",
    "format_task_list",
    "keep_last_task_context",
    "parse_task_id",
]
