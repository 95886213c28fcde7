"""`open_task_store`: the shared task store for where a list lives (a store, folder or URL)."""

from __future__ import annotations

import os

from replan.state.task_stores.filesystem import FileTaskStore
from replan.state.task_stores.store import TaskStore

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
"""How a `PostgresTaskStore` URL starts; anything else that is not a store is a folder path."""


def open_task_store(where: TaskStore | str | os.PathLike[str]) -> TaskStore:
    """A store given as itself, a folder path, or a `postgresql://` URL."""
    if isinstance(where, TaskStore):
        return where
    if isinstance(where, str) and where.startswith(POSTGRES_SCHEMES):
        # Loaded only for a URL: the PostgreSQL store needs the optional psycopg.
        from replan.state.task_stores.postgres import PostgresTaskStore

        return PostgresTaskStore(where)
    return FileTaskStore(where)
