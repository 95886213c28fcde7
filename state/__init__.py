"""Typed data and pure operations: tasks and their folder store, plan documents.

Nothing in this package imports LangGraph; the graph state schemas live in `replan.graphs`
(and `TasksState` beside the task tools, in `replan.tools`).
"""

from replan.state.task_store import FileTaskStore, TaskStoreCorruptError
from replan.state.task_views import format_task_details, format_task_list, format_task_overview
from replan.state.tasks import (
    TASK_STATUSES,
    UPDATE_STATUSES,
    Task,
    TaskContext,
    TaskError,
    TaskStatus,
    TaskUpdateResult,
    UpdateStatus,
    find_cycle,
    parse_task_id,
)

__all__ = [
    "TASK_STATUSES",
    "UPDATE_STATUSES",
    "FileTaskStore",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskStatus",
    "TaskStoreCorruptError",
    "TaskUpdateResult",
    "UpdateStatus",
    "find_cycle",
    "format_task_details",
    "format_task_list",
    "format_task_overview",
    "parse_task_id",
]
