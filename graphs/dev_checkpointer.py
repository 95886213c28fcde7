"""Persistence for `langgraph dev`, enabled by langgraph.json's `checkpointer.path`.

The dev server enters `dev_checkpointer()` once per worker thread and keeps every thread's
checkpoints where `$REPLAN_DEV_DB` says, chosen as the CLI's `--db` is: a `postgresql://` URL
keeps them in PostgreSQL, a path (or `sqlite:PATH`) in that SQLite file. Unset, the file is
`.langgraph_api/replan-dev.sqlite` under the directory the server runs in. The connection
settings are the CLI's, so `replan show --db SAME --thread-id ID` and `replan threads --db SAME`
read the runs started in Studio.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver

from replan.graphs.persistence import is_postgres_url, open_checkpointer, sqlite_path

DEFAULT_DEV_DB = Path(".langgraph_api") / "replan-dev.sqlite"


def dev_db() -> str:
    """Where the dev server keeps its checkpoints: `$REPLAN_DEV_DB` or the default file."""
    return os.environ.get("REPLAN_DEV_DB") or str(DEFAULT_DEV_DB)


@asynccontextmanager
async def dev_checkpointer() -> AsyncIterator[BaseCheckpointSaver[str]]:
    """The dev server's saver on `dev_db()` (a SQLite file's folder is created)."""
    target = dev_db()
    if not is_postgres_url(target):
        sqlite_path(target).parent.mkdir(parents=True, exist_ok=True)
    async with open_checkpointer(target) as saver:
        yield saver
