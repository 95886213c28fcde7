"""Thread leases on a fresh PostgreSQL database that another process is setting up."""

from __future__ import annotations

import asyncio

from replan.graphs import thread_leases
from replan.graphs.persistence import open_checkpointer

WAIT_SECONDS = 30.0

_WAITING = "SELECT count(*) FROM pg_locks WHERE pid = %s AND locktype = 'advisory' AND NOT granted"


async def _until_waiting_for_the_creation_lock(url: str, pid: int) -> None:
    """Return once backend `pid` waits for an advisory lock (fail after `WAIT_SECONDS`)."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as watcher:
        for _ in range(int(WAIT_SECONDS / 0.05)):
            row = await (await watcher.execute(_WAITING, (pid,))).fetchone()
            if row and row[0]:
                return
            await asyncio.sleep(0.05)
    raise AssertionError("taking the lease did not wait for the table's creation lock")


def test_a_lease_taken_while_another_process_creates_the_table_waits_for_it(
    postgres_url: str,
) -> None:
    # Before, both ran CREATE TABLE IF NOT EXISTS at once and the second process failed
    # with a duplicate pg_type row (seen with two `replan run` on one fresh database).
    import psycopg  # the postgres_url fixture has skipped the test without it

    async def take_while_created_elsewhere() -> thread_leases.Lease:
        async with open_checkpointer(postgres_url) as saver:
            pid = saver.conn.info.backend_pid  # type: ignore[attr-defined]
            with psycopg.connect(postgres_url) as creating:  # another process, mid-creation
                creating.execute(
                    "SELECT pg_advisory_xact_lock(%s)", (thread_leases.CREATE_LOCK_KEY,)
                )
                creating.execute(thread_leases._CREATE)
                taking = asyncio.ensure_future(
                    thread_leases.take_lease(saver, "t1", thread_leases.this_holder())
                )
                await _until_waiting_for_the_creation_lock(postgres_url, pid)
                creating.commit()
            return await asyncio.wait_for(taking, WAIT_SECONDS)

    lease = asyncio.run(take_while_created_elsewhere())
    assert (lease.thread_id, lease.epoch) == ("t1", 1)
