"""SQLite persistence for plan–execute runs, safe for several processes on one file.

`open_checkpointer(path)` yields an `AsyncSqliteSaver` (the CLI drives runs with `astream`) over a
connection with a busy timeout and WAL journaling, so concurrent runs in different processes
wait for each other's writes instead of failing with "database is locked". The CLI and the
dev-server configuration share it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from replan.state import TaskContext
from replan.tools.task_tools import TaskCallChange

DEFAULT_DB = "replan.sqlite"
BUSY_TIMEOUT_SECONDS = 30.0
CHECKPOINTED_TYPES = (TaskContext, TaskCallChange)
"""Non-LangChain types stored in checkpoints (task lists, and task-call changes in the writes of
an unfinished step), allowed back out explicitly."""


def checkpoint_serializer() -> JsonPlusSerializer:
    """A serializer for any saver of replan checkpoints (`InMemorySaver(serde=...)`):
    it lets `CHECKPOINTED_TYPES` back out without LangGraph's unregistered-type warning."""
    allowed = [(cls.__module__, cls.__name__) for cls in CHECKPOINTED_TYPES]
    return JsonPlusSerializer(allowed_msgpack_modules=allowed)


@asynccontextmanager
async def open_checkpointer(
    path: str | Path = DEFAULT_DB, *, busy_timeout: float = BUSY_TIMEOUT_SECONDS
) -> AsyncIterator[AsyncSqliteSaver]:
    """A ready `AsyncSqliteSaver` on `path` (created if missing); closes the file on exit."""
    conn = await aiosqlite.connect(str(path), timeout=busy_timeout)
    try:
        await conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        await conn.execute("PRAGMA journal_mode = WAL")
        saver = AsyncSqliteSaver(conn, serde=checkpoint_serializer())
        await saver.setup()
        yield saver
    finally:
        await conn.close()


async def stored_thread_ids(saver: AsyncSqliteSaver) -> list[str]:
    """The ids of the threads with a checkpoint in the saver's file, most recent first."""
    query = (
        "SELECT thread_id FROM checkpoints WHERE checkpoint_ns = '' "
        "GROUP BY thread_id ORDER BY MAX(checkpoint_id) DESC"
    )
    async with saver.conn.execute(query) as cursor:
        return [str(row[0]) async for row in cursor]
