"""The run store on a SQLite file that another process is setting up at the same time."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.sqlite.aio import AsyncSqliteStore

from replan.graphs.run_store import open_run_store


def test_a_store_opened_while_another_process_migrates_the_file_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seen in CI: two `replan run` on one fresh file, one stopped with "duplicate column name".
    path = tmp_path / "runs.sqlite"
    altering = next(v for v, sql in enumerate(AsyncSqliteStore.MIGRATIONS) if "ALTER" in sql)
    other = sqlite3.connect(path, isolation_level=None)  # another process, mid-migration:
    other.execute("CREATE TABLE store_migrations (v INTEGER PRIMARY KEY)")
    for v in range(altering):
        other.executescript(AsyncSqliteStore.MIGRATIONS[v])
        other.execute("INSERT INTO store_migrations (v) VALUES (?)", (v,))
    other.executescript(AsyncSqliteStore.MIGRATIONS[altering])  # applied, not yet recorded
    failed = asyncio.Event()
    setup = AsyncSqliteStore.setup

    async def watched(store: AsyncSqliteStore) -> None:
        try:
            await setup(store)
        except sqlite3.Error:
            failed.set()
            raise

    monkeypatch.setattr(AsyncSqliteStore, "setup", watched)

    async def open_while_migrated() -> Any:
        async def opened() -> Any:
            async with open_run_store(path) as store:
                return await store.aget(("ns",), "key")

        opening = asyncio.ensure_future(opened())
        await asyncio.wait_for(failed.wait(), 30)  # its setup ran into the other's migration
        other.execute("INSERT INTO store_migrations (v) VALUES (?)", (altering,))  # goes on
        return await asyncio.wait_for(opening, 30)

    assert asyncio.run(open_while_migrated()) is None
    other.close()
