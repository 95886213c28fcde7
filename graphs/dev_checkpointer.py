"""SQLite persistence for `langgraph dev`, enabled by langgraph.json's `checkpointer.path`.

The dev server enters `dev_checkpointer()` once per worker thread and keeps every thread's
checkpoints in one SQLite file: `$REPLAN_DEV_DB`, else `.langgraph_api/replan-dev.sqlite` under
the directory the server runs in. The connection settings (WAL, busy timeout) are the CLI's, so
`replan show --db FILE --thread-id ID` can read a run started in Studio.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from replan.graphs.cli.persistence import open_checkpointer

DEFAULT_DEV_DB = Path(".langgraph_api") / "replan-dev.sqlite"


def dev_db_path() -> Path:
    """Where the dev server keeps its checkpoints (`$REPLAN_DEV_DB` or the default)."""
    return Path(os.environ.get("REPLAN_DEV_DB") or DEFAULT_DEV_DB)


@asynccontextmanager
async def dev_checkpointer() -> AsyncIterator[AsyncSqliteSaver]:
    """The dev server's saver: an `AsyncSqliteSaver` on `dev_db_path()` (folder created)."""
    path = dev_db_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    async with open_checkpointer(path) as saver:
        yield saver
