"""One runner per thread: a run started or resumed on a runs database from `open_checkpointer`
holds a lease on its thread (`hold_thread`), kept in the table `replan_leases` beside the
checkpoints.

A lease names its holder (process and host), lasts `lease_seconds()` and is renewed at a third
of that while the run runs; one whose process is gone from this host counts as lapsed.
Taking a thread whose lease is held and live raises `ThreadHeldError` (one line saying who
holds it); a lapsed lease is taken over, and each taking raises the thread's epoch. Every
checkpoint write of the holder first checks that the epoch is still its own, so a holder that
was paused or cut off and wakes up after another took over cannot write (`LeaseLostError`).
Servers (`langgraph dev`, Aegra) arbitrate their own runs and take no lease.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import math
import os
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # `replan show` and `threads` read leases without loading LangGraph
    from langgraph.checkpoint.base import BaseCheckpointSaver

LEASE_ENV = "REPLAN_LEASE_SECONDS"
DEFAULT_LEASE_SECONDS = 30.0
"""How long a lease lasts unless renewed, when `$REPLAN_LEASE_SECONDS` does not say."""
TABLE = "replan_leases"
CREATE_LOCK_KEY = 0x6C6561736573  # "leases" in ASCII
"""PostgreSQL advisory lock held while creating the table: two processes running `CREATE TABLE
IF NOT EXISTS` at once on a fresh database can fail in one of them (a duplicate `pg_type`
row)."""
_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (thread_id TEXT PRIMARY KEY, holder TEXT NOT NULL, "
    "host TEXT NOT NULL, pid INTEGER NOT NULL, epoch INTEGER NOT NULL, "
    "expires_at DOUBLE PRECISION NOT NULL)"
)
_TAKE = (
    f"INSERT INTO {TABLE} (thread_id, holder, host, pid, epoch, expires_at) "
    "VALUES (?, ?, ?, ?, 1, ?) ON CONFLICT (thread_id) DO UPDATE SET holder = excluded.holder, "
    f"host = excluded.host, pid = excluded.pid, epoch = {TABLE}.epoch + 1, "
    f"expires_at = excluded.expires_at WHERE {TABLE}.expires_at < ? RETURNING epoch"
)
_STEAL = (
    f"UPDATE {TABLE} SET holder = ?, host = ?, pid = ?, epoch = epoch + 1, expires_at = ? "
    "WHERE thread_id = ? AND epoch = ? RETURNING epoch"
)
_READ = f"SELECT holder, host, pid, epoch, expires_at FROM {TABLE} WHERE thread_id = ?"
_RENEW = f"UPDATE {TABLE} SET expires_at = ? WHERE thread_id = ? AND epoch = ? AND holder = ?"
_RELEASE = f"UPDATE {TABLE} SET expires_at = 0 WHERE thread_id = ? AND epoch = ? AND holder = ?"
_EXISTS_SQLITE = f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{TABLE}'"

T = TypeVar("T")


class LeaseSettingError(ValueError):
    """`$REPLAN_LEASE_SECONDS` is not a number of seconds above 0; the message is one line."""


def lease_seconds() -> float:
    """How long a lease lasts unless renewed: `$REPLAN_LEASE_SECONDS`, else 30 s."""
    given = os.environ.get(LEASE_ENV, "").strip()
    if not given:
        return DEFAULT_LEASE_SECONDS
    try:
        seconds = float(given)
    except ValueError:
        seconds = math.nan
    if not seconds > 0 or math.isinf(seconds):
        raise LeaseSettingError(f"{LEASE_ENV} must be a number of seconds above 0, not {given!r}")
    return seconds


class ThreadHeldError(Exception):
    """The thread is being run by another live process; the message is one line."""


class LeaseLostError(Exception):
    """This run's lease was taken over by another process; it stops writing."""


@dataclass(frozen=True)
class Lease:
    """Who holds a thread, until when (seconds since the epoch), and the thread's epoch."""

    thread_id: str
    holder: str
    host: str
    pid: int
    epoch: int
    expires_at: float

    def who(self) -> str:
        return f"process {self.pid} on {self.host}"

    def live(self, now: float | None = None) -> bool:
        """Unexpired, and not held by a process of this host that is gone (killed)."""
        if self.host == socket.gethostname() and not _alive(self.pid):
            return False
        return self.expires_at > (time.time() if now is None else now)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def this_holder() -> str:
    """This process's holder name: host, process and a start stamp (process ids are reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{time.time_ns()}"


class _Table:
    """The lease table over the saver's own connection (SQLite or PostgreSQL), each statement
    under the saver's lock so that it never runs inside one of the saver's transactions."""

    def __init__(self, saver: BaseCheckpointSaver[Any]) -> None:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        self.saver = saver
        self.postgres = not isinstance(saver, AsyncSqliteSaver)
        self.lock: asyncio.Lock = saver.lock  # type: ignore[attr-defined]

    async def run(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        conn: Any = self.saver.conn  # type: ignore[attr-defined]
        async with self.lock:
            if self.postgres:
                cursor = await conn.execute(sql.replace("?", "%s"), params)
                rows = await cursor.fetchall() if cursor.description else []
                return [tuple(row.values()) if isinstance(row, dict) else row for row in rows]
            async with conn.execute(sql, params) as cursor:
                rows = list(await cursor.fetchall())
            await conn.commit()
            return [tuple(row) for row in rows]

    async def create(self) -> None:
        """Create the table if it is missing (on PostgreSQL, one process at a time)."""
        if not self.postgres:
            await self.run(_CREATE)
            return
        conn: Any = self.saver.conn  # type: ignore[attr-defined]
        async with self.lock, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (CREATE_LOCK_KEY,))
            await conn.execute(_CREATE)

    async def exists(self) -> bool:
        if self.postgres:
            rows = await self.run("SELECT to_regclass(?) IS NOT NULL", (TABLE,))
            return bool(rows and rows[0][0])
        return bool(await self.run(_EXISTS_SQLITE))


async def thread_lease(saver: BaseCheckpointSaver[Any], thread_id: str) -> Lease | None:
    """The live lease on `thread_id`, if a process holds one (read only: no table is made)."""
    table = _Table(saver)
    if not await table.exists():
        return None
    rows = await table.run(_READ, (thread_id,))
    if not rows:
        return None
    lease = Lease(thread_id, *rows[0])
    return lease if lease.live() else None


async def refuse_if_held(saver: BaseCheckpointSaver[Any], thread_id: str) -> None:
    """Raise ThreadHeldError when a process holds a live lease on `thread_id`."""
    if held := await thread_lease(saver, thread_id):
        raise ThreadHeldError(_held(thread_id, held))


def _held(thread_id: str, held: Lease | None) -> str:
    """Who holds `thread_id`, in one line (another process's lease, just taken, when `held`
    is None)."""
    who = held.who() if held else "another process"
    left = max(0.0, held.expires_at - time.time()) if held else lease_seconds()
    return (
        f"thread {thread_id} is running in {who}; wait for it to end, or for its lease to "
        f"lapse ({left:.0f} s without renewal) if that process is gone"
    )


async def take_lease(saver: BaseCheckpointSaver[Any], thread_id: str, holder: str) -> Lease:
    """Take `thread_id` for `holder`: a new lease, or one that lapsed, with the next epoch.
    Raises ThreadHeldError while another holder's lease is live."""
    table = _Table(saver)
    await table.create()
    now, lasts = time.time(), lease_seconds()
    host, pid = socket.gethostname(), os.getpid()
    taken = await table.run(_TAKE, (thread_id, holder, host, pid, now + lasts, now))
    rows = [] if taken else await table.run(_READ, (thread_id,))
    held = Lease(thread_id, *rows[0]) if rows else None
    if held is not None and not held.live(now):  # its process is gone: taken over at once
        params = (holder, host, pid, now + lasts, thread_id, held.epoch)
        taken = await table.run(_STEAL, params)
    if taken:
        return Lease(thread_id, holder, host, pid, int(taken[0][0]), now + lasts)
    raise ThreadHeldError(_held(thread_id, held))


class _Holding:
    """A taken lease, renewed in the background, checked before every checkpoint write."""

    def __init__(self, table: _Table, lease: Lease) -> None:
        self.table, self.lease = table, lease
        self.lost: str | None = None

    async def check(self) -> None:
        if self.lost is None:
            rows = await self.table.run(_READ, (self.lease.thread_id,))
            current = Lease(self.lease.thread_id, *rows[0]) if rows else None
            if current is None or (current.epoch, current.holder) != (
                self.lease.epoch,
                self.lease.holder,
            ):
                who = current.who() if current else "nobody"
                self.lost = f"thread {self.lease.thread_id} was taken over by {who}"
        if self.lost is not None:
            raise LeaseLostError(f"{self.lost}: this run stopped writing")

    async def renew(self) -> None:
        """Renew the lease until it is lost (the next write then stops the run)."""
        lasts = lease_seconds()
        while self.lost is None:
            await asyncio.sleep(lasts / 3)
            lease = self.lease
            params = (time.time() + lasts, lease.thread_id, lease.epoch, lease.holder)
            try:
                await self.table.run(_RENEW, params)
                await self.check()
            except LeaseLostError:
                return

    def guarded(self, write: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
        @functools.wraps(write)  # LangGraph reads the writer's signature
        async def checked(*args: Any, **kwargs: Any) -> T:
            await self.check()
            return await write(*args, **kwargs)

        return checked


@asynccontextmanager
async def hold_thread(
    saver: BaseCheckpointSaver[Any], thread_id: str
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """Take `thread_id` (`take_lease`) for as long as the block runs, and give a copy of `saver`
    whose checkpoint writes check the lease first; the lease is let go at the end."""
    table = _Table(saver)
    holding = _Holding(table, await take_lease(saver, thread_id, this_holder()))
    leased = copy.copy(saver)
    leased.aput = holding.guarded(saver.aput)  # type: ignore[method-assign,assignment]
    leased.aput_writes = holding.guarded(saver.aput_writes)  # type: ignore[method-assign,assignment]
    renewing = asyncio.create_task(holding.renew())
    try:
        yield leased
    finally:
        renewing.cancel()
        if holding.lost is None:
            lease = holding.lease
            await table.run(_RELEASE, (lease.thread_id, lease.epoch, lease.holder))
