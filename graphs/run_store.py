"""The store of a CLI run (`open_run_store`): a LangGraph store in the runs database, where runs
keep the intents of their tool calls (`replan.graphs.durable_calls`) and tools find
`runtime.store`."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, cast

from langgraph.store.base import BaseStore

if TYPE_CHECKING:
    from langgraph.store.sqlite.aio import AsyncSqliteStore
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

SETUP_RACES = ("duplicate column name", "UNIQUE constraint failed")
"""What a SQLite store's setup raises while another process sets up the same file (its
migrations are not one transaction): it is set up again once that process is done."""
SETUP_RETRY_SECONDS = 0.05


async def setup_sqlite_store(store: AsyncSqliteStore, busy_timeout: float) -> None:
    """`store.setup()`, again while another process is setting up the same file (within
    `busy_timeout` seconds)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + busy_timeout
    while True:
        try:
            await store.setup()
            return
        except sqlite3.Error as exc:
            if not any(race in str(exc) for race in SETUP_RACES) or loop.time() > deadline:
                raise
        await asyncio.sleep(SETUP_RETRY_SECONDS)


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
            await setup_sqlite_store(store, busy_timeout)
        except sqlite3.Error as exc:
            raise unavailable("cannot open", shown, exc) from exc
        yield store
    finally:
        await conn.close()
