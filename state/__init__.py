"""Typed data and pure operations: tasks and their folder store, plan documents.

Nothing in this package imports LangGraph; the graph state schemas live in `replan.graphs`
(and `TasksState` beside the task tools, in `replan.tools`).
"""

from replan.state.task_store import (
    FileTaskStore,
    TaskStore,
    TaskStoreCorruptError,
    TaskStoreUnavailableError,
    open_task_store,
)
from replan.state.task_store_postgres import PostgresTaskStore
from replan.state.task_table import TaskTable
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
    "PostgresTaskStore",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskStatus",
    "TaskStore",
    "TaskStoreCorruptError",
    "TaskStoreUnavailableError",
    "TaskTable",
    "TaskUpdateResult",
    "UpdateStatus",
    "find_cycle",
    "format_task_details",
    "format_task_list",
    "format_task_overview",
    "open_task_store",
    "parse_task_id",
]
