"""Task lists kept outside the graph state, shared by several agents and processes.

`TaskStore` (`store`) is the protocol; `FileTaskStore` (`filesystem`, with the folder's formats
in `journal`) keeps a list in a folder, `PostgresTaskStore` (`postgres`) in a PostgreSQL
database; `open_task_store` (`dispatch`) picks one by where the list lives. `PostgresTaskStore`
is not imported here: `open_task_store` loads it for a URL, and `replan.state` on first use.
"""

from replan.state.task_stores.dispatch import open_task_store
from replan.state.task_stores.filesystem import FileTaskStore
from replan.state.task_stores.store import (
    TaskChange,
    TaskStore,
    TaskStoreCorruptError,
    TaskStoreUnavailableError,
)

__all__ = [
    "FileTaskStore",
    "TaskChange",
    "TaskStore",
    "TaskStoreCorruptError",
    "TaskStoreUnavailableError",
    "open_task_store",
]
