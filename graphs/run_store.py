"""The store of a CLI run (`open_run_store`): a LangGraph store in the runs database, where runs
keep the intents of their tool calls (`replan.graphs.durable_calls`) and tools find
`runtime.store`."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, cast

from langgraph.store.base import BaseStore

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg.rows import DictRow

from replan.graphs.persistence import (
    BUSY_TIMEOUT_SECONDS,
    DEFAULT_DB,
    display_target,
    is_postgres_url,
    postgres_missing,
    setup_postgres,
    sqlite_path,
    unavailable,
)


@asynccontextmanager
async def open_run_store(
    target: str | Path = DEFAULT_DB, *, busy_timeout: float = BUSY_TIMEOUT_SECONDS
) -> AsyncIterator[BaseStore]:
    """A LangGraph store in the runs database `target`, on its own connection (its tables are
    made on first use). Raises DatabaseUnavailableError as `open_checkpointer` does."""
    shown = display_target(target)
    if is_postgres_url(target):
        try:
            import psycopg
            from langgraph.store.postgres.aio import AsyncPostgresStore
        except ImportError as exc:
            raise postgres_missing(shown) from exc
        try:
            async with AsyncPostgresStore.from_conn_string(str(target)) as postgres:
                await setup_postgres(postgres, cast("AsyncConnection[DictRow]", postgres.conn))
                yield postgres
        except (psycopg.Error, TimeoutError) as exc:
            raise unavailable("cannot use", shown, exc) from exc
        return
    import aiosqlite
    from langgraph.store.sqlite.aio import AsyncSqliteStore

    path = sqlite_path(target)
    try:
        conn = await aiosqlite.connect(str(path), isolation_level=None, timeout=busy_timeout)
    except (sqlite3.Error, OSError) as exc:
        raise unavailable("cannot open", shown, exc) from exc
    try:
        await conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        store = AsyncSqliteStore(conn)
        try:
            await store.setup()
        except sqlite3.Error as exc:
            raise unavailable("cannot open", shown, exc) from exc
        yield store
    finally:
        await conn.close()
