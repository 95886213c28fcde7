"""Typed data and pure operations: tasks and their shared stores, plan documents, token tallies.

Nothing in this package imports LangGraph; the graph state schemas live in `replan.graphs`
(and `TasksState` beside the task tools, in `replan.tools`). `PostgresTaskStore` is loaded on
first use, so `import replan.state` does not load the PostgreSQL store.
"""

from typing import TYPE_CHECKING, Any

from replan.state.task_graph import find_cycle
from replan.state.task_stores import (
    FileTaskStore,
    TaskStore,
    TaskStoreCorruptError,
    TaskStoreUnavailableError,
    open_task_store,
)
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
    parse_task_id,
)

if TYPE_CHECKING:
    from replan.state.task_stores.postgres import PostgresTaskStore as PostgresTaskStore

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


def __getattr__(name: str) -> Any:
    """Load `PostgresTaskStore` when it is first asked for."""
    if name == "PostgresTaskStore":
        from replan.state.task_stores.postgres import PostgresTaskStore

        return PostgresTaskStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
