"""Task lists kept outside the graph state, shared by several agents and processes.

`TaskStore` (`store`) is the protocol; `FileTaskStore` (`filesystem`, with the folder's formats
in `journal`) keeps a list in a folder, `PostgresTaskStore` (`postgres`) in a PostgreSQL
database; `open_task_store` (`dispatch`) picks one by where the list lives. `PostgresTaskStore`
is loaded on first use (it needs `pip install "replan[postgres]"`), so this package imports
without psycopg.
"""

from typing import TYPE_CHECKING, Any

from replan.state.task_stores.dispatch import open_task_store
from replan.state.task_stores.filesystem import FileTaskStore
from replan.state.task_stores.store import (
    TaskChange,
    TaskStore,
    TaskStoreCorruptError,
    TaskStoreUnavailableError,
)

if TYPE_CHECKING:  # loaded on first use; not in __all__, so `import *` never needs it
    from replan.state.task_stores.postgres import PostgresTaskStore as PostgresTaskStore


def __getattr__(name: str) -> Any:
    """Load `PostgresTaskStore` only when it is asked for."""
    if name == "PostgresTaskStore":
        from replan.state.task_stores.postgres import PostgresTaskStore

        return PostgresTaskStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FileTaskStore",
    "TaskChange",
    "TaskStore",
    "TaskStoreCorruptError",
    "TaskStoreUnavailableError",
    "open_task_store",
]
