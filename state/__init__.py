"""Typed data and pure operations: tasks, graph state schemas, plan documents."""

from state.plan_execute import ExecutedStep, PlanExecuteInput, PlanExecuteOutput, PlanExecuteState
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
from state.tasks_state import TasksState, as_task_context, keep_last_task_context

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
