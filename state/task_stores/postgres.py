"""`PostgresTaskStore`: a shared task list in PostgreSQL, for agents on several machines.

Needs the optional extra: `pip install "replan[postgres]"` (psycopg 3); importing this module
does not. Two tables, created on first use in the connection's schema (its `search_path`):

    replan_task_lists  name, epoch, generation, high_watermark     one row per list
    replan_tasks       list_name, id, generation, task (json)      one row per ID ever issued

Every operation runs in one transaction that first takes a transaction-scoped advisory lock on
its list, so operations on one list run one at a time across connections, processes and
machines, and a refused or failed operation rolls back whole. Rows are never deleted: a
deleted task keeps its row with `task` NULL, so an issued ID stays taken (and the primary key
refuses a reused one). Each write raises the list's generation by one and stamps the rows it
wrote with it; a store that last saw generation g reads only the rows stamped after g, so an
operation costs what changed, not the size of the list. The epoch (random, set when the list
row is created) tells a store when the list it remembers was dropped and made again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from replan.state.task_stores.store import (
    TaskChange,
    TaskStoreCorruptError,
    run_operation,
    snapshot,
    unavailable,
)
from replan.state.tasks import Task, TaskContext, TaskError

if TYPE_CHECKING:
    import psycopg

T = TypeVar("T")

INSTALL_HINT = 'PostgresTaskStore needs psycopg: pip install "replan[postgres]"'
_SETUP_LOCK = 0x7461736B73  # "tasks": the advisory lock for creating the tables (runs use
# "replan", plans "plans"; one key for all would let a setup wait on another that waits on it)
_SETUP = (
    """CREATE TABLE IF NOT EXISTS replan_task_lists (
        name text PRIMARY KEY,
        epoch uuid NOT NULL DEFAULT gen_random_uuid(),
        generation bigint NOT NULL DEFAULT 0,
        high_watermark bigint NOT NULL DEFAULT 0 CHECK (high_watermark >= 0))""",
    """CREATE TABLE IF NOT EXISTS replan_tasks (
        list_name text NOT NULL REFERENCES replan_task_lists (name) ON DELETE CASCADE,
        id bigint NOT NULL CHECK (id > 0),
        generation bigint NOT NULL,
        task json,
        PRIMARY KEY (list_name, id))""",
    "CREATE INDEX IF NOT EXISTS replan_tasks_by_generation ON replan_tasks (list_name, generation)",
)
_LOCK_LIST = "SELECT pg_advisory_xact_lock(hashtextextended('replan task list ' || %s, 0))"
_LIST_ROW = "SELECT epoch::text, generation, high_watermark FROM replan_task_lists WHERE name = %s"
_NEW_LIST = "INSERT INTO replan_task_lists (name) VALUES (%s) ON CONFLICT DO NOTHING"
_ALL_TASKS = "SELECT id, task FROM replan_tasks WHERE list_name = %s AND task IS NOT NULL"
_CHANGED_TASKS = "SELECT id, task FROM replan_tasks WHERE list_name = %s AND generation > %s"
_BUMP = "UPDATE replan_task_lists SET generation = %s, high_watermark = %s WHERE name = %s"
# A tombstone (task NULL) is never overwritten: an ID, once deleted, is not issued again.
_WRITE = """INSERT INTO replan_tasks (list_name, id, generation, task) VALUES (%s, %s, %s, %s)
    ON CONFLICT (list_name, id) DO UPDATE SET generation = EXCLUDED.generation,
    task = EXCLUDED.task WHERE replan_tasks.task IS NOT NULL"""
_DELETE = """UPDATE replan_tasks SET task = NULL, generation = %s
    WHERE list_name = %s AND id = ANY(%s) AND task IS NOT NULL"""


@dataclass
class _Seen:
    epoch: str
    generation: int
    context: TaskContext


class PostgresTaskStore:
    """A named task list in a PostgreSQL database (a `TaskStore`).

    Args:
        conninfo: a `postgresql://` URL (or libpq connection string); the store keeps one
            connection and runs one operation at a time on it. Or a `psycopg_pool`
            `ConnectionPool`, from which each operation borrows a connection.
        list_name: which list in the database; several lists can share the tables.
    """

    def __init__(self, conninfo: str | Any, list_name: str = "default") -> None:
        try:
            import psycopg
            from psycopg.types.json import Json

            from replan.state.plans.postgres import CONNECT_TIMEOUT_SECONDS
        except ImportError as error:
            raise ImportError(INSTALL_HINT) from error
        self._psycopg = psycopg
        self._json = Json
        self.list_name = list_name
        self._conninfo = conninfo if isinstance(conninfo, str) else None
        self._pool = None if isinstance(conninfo, str) else conninfo
        info = self._conninfo if self._conninfo is not None else getattr(conninfo, "conninfo", "")
        try:
            parts = psycopg.conninfo.conninfo_to_dict(info or "")
        except psycopg.Error as error:
            raise ValueError(f"Not a PostgreSQL URL: {' '.join(str(error).split())}") from None
        self._connect_timeout = parts.get("connect_timeout", CONNECT_TIMEOUT_SECONDS)
        server = f"{parts.get('host', 'localhost')}:{parts.get('port', 5432)}"
        self._where = f"{server}/{parts.get('dbname', '')}"
        self._connection: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()
        self._ready = False
        self._seen: _Seen | None = None
        self._generation = 0  # of the list, as read in the current session
        self._cursor: psycopg.Cursor[Any] | None = None

    @property
    def location(self) -> str:
        return f"shared task list {self.list_name!r} in PostgreSQL at {self._where}"

    def read(self) -> TaskContext:
        """The current task list (a snapshot; changing it does not change the store)."""
        return self.transact(snapshot)

    def transact(self, operation: Callable[[TaskContext], T]) -> T:
        """Run `operation` on the stored list in one transaction under the list's advisory lock
        and save what changed, all or nothing (`TaskStore.transact`)."""
        return run_operation(self._session(), self._save, operation)

    def close(self) -> None:
        """Close the store's own connection (a pool is left to its owner)."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def __enter__(self) -> PostgresTaskStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- session -------------------------------------------------------------------------

    @contextmanager
    def _session(self) -> Iterator[TaskContext]:
        # Only the store's own steps raise psycopg errors; an operation's errors pass through.
        with self._lock, self._database_errors(), self._borrowed() as connection:
            with connection.transaction(), connection.cursor() as cursor:
                self._cursor = cursor
                try:
                    yield self._current(cursor)
                finally:
                    self._cursor = None

    @contextmanager
    def _borrowed(self) -> Iterator[psycopg.Connection[Any]]:
        if self._pool is not None:
            with self._pool.connection() as connection:
                self._setup(connection)
                yield connection
            return
        if self._connection is None or self._connection.closed or self._connection.broken:
            self._connection = self._psycopg.connect(
                str(self._conninfo), connect_timeout=self._connect_timeout
            )
        self._setup(self._connection)
        yield self._connection

    def _setup(self, connection: psycopg.Connection[Any]) -> None:
        if self._ready:
            return
        with connection.transaction(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_SETUP_LOCK,))
            for statement in _SETUP:
                cursor.execute(statement)
        self._ready = True

    @contextmanager
    def _database_errors(self) -> Iterator[None]:
        try:
            yield
        except self._psycopg.Error as error:
            self._seen = None
            raise unavailable(self.location, error) from error

    def _current(self, cursor: psycopg.Cursor[Any]) -> TaskContext:
        """The stored list: what this store saw last, brought up to date, or read afresh."""
        cursor.execute(_LOCK_LIST, (self.list_name,))
        row = cursor.execute(_LIST_ROW, (self.list_name,)).fetchone()
        if row is None:
            cursor.execute(_NEW_LIST, (self.list_name,))
            row = cursor.execute(_LIST_ROW, (self.list_name,)).fetchone()
        assert row is not None  # inserted just above, under the list's lock
        epoch, generation, watermark = row
        seen = self._seen
        if seen is not None and seen.epoch == epoch and seen.generation == generation:
            return seen.context
        if seen is not None and seen.epoch == epoch and seen.generation < generation:
            rows = cursor.execute(_CHANGED_TASKS, (self.list_name, seen.generation)).fetchall()
            table = seen.context.tasks
        else:
            rows = cursor.execute(_ALL_TASKS, (self.list_name,)).fetchall()
            table = TaskContext().tasks
        for task_id, data in rows:
            table = (
                table.without(str(task_id))
                if data is None
                else table.with_task(self._task(task_id, data))
            )
        context = TaskContext.model_construct(
            tasks=table, high_watermark=max(watermark, table.highest_id())
        )
        self._seen = _Seen(epoch, generation, context)
        self._generation = generation
        return context

    def _task(self, task_id: int, data: Any) -> Task:
        try:
            task = Task.model_validate(data)
        except ValidationError as error:
            problem = str(error).splitlines()[0]
        else:
            if task.id == str(task_id):
                return task
            problem = f"holds task id {task.id!r}"
        raise TaskStoreCorruptError(
            f"The {self.location} has a damaged row (task {task_id}: {problem}). Nothing was "
            "changed. Repair or delete that row in replan_tasks, then try again."
        )

    def _save(self, change: TaskChange, context: TaskContext) -> None:
        cursor = self._cursor
        assert cursor is not None
        generation = self._generation + 1
        name = self.list_name
        json_value = self._json
        cursor.execute(_BUMP, (generation, change.high_watermark, name))
        if change.written:
            rows = [(name, int(i), generation, json_value(d)) for i, d in change.written.items()]
            cursor.executemany(_WRITE, rows)
            if cursor.rowcount != len(rows):
                raise TaskError(
                    "The operation would reuse the ID of a deleted task; IDs are never "
                    "reused. Nothing was changed."
                )
        if change.deleted:
            cursor.execute(_DELETE, (generation, name, [int(i) for i in change.deleted]))
        assert self._seen is not None  # set by _current in this session
        self._seen = _Seen(self._seen.epoch, generation, context)
        self._generation = generation
