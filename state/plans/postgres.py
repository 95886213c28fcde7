"""PostgreSQL plan storage: plans as rows of one table, shared by processes on any machine.

Each write is one transaction. The plan's row is read `FOR UPDATE`, so a racing writer waits
for the first to commit and then reads the revision it wrote; `apply_update` checks and bumps
it; the row is written back. A plan that does not exist yet is inserted with `ON CONFLICT DO
NOTHING`: a writer that lost the race to create it reads the winner's row and is refused (or
merges, without an expected revision) like any other late writer. Rows whose values do not
make a valid plan are reported (`PlanCorrupt`, or a warning in `list`), never skipped.

The table is `replan_plans` in the connection's schema (set `options=-csearch_path%3DNAME` in
the URL to choose another). Needs psycopg 3 and its pool: `pip install 'replan[postgres]'`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from functools import partial
from types import TracebackType
from typing import Any

try:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict
    from psycopg.rows import DictRow, dict_row
    from psycopg_pool import ConnectionPool
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "PostgresPlanStorage needs psycopg 3 and psycopg-pool: pip install 'replan[postgres]'"
    ) from exc

from replan.state.plans.model import (
    Plan,
    PlanListing,
    PlanStorageError,
    PlanUpdate,
    validate_name,
)
from replan.state.plans.storage import apply_update, decode_plan, listing_from_rows, may_delete

TABLE = "replan_plans"
CONNECT_TIMEOUT_SECONDS = 10
SCHEMA_LOCK_KEY = 0x706C616E73  # "plans" in ASCII
"""Advisory lock held while creating the table: concurrent `CREATE TABLE IF NOT EXISTS` on a
fresh database can fail in one of the processes."""

_COLUMNS = tuple(Plan.model_fields)
_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (name TEXT PRIMARY KEY, "
    + ", ".join(
        f"{column} {'BIGINT' if column == 'revision' else 'TEXT'} NOT NULL"
        for column in _COLUMNS
        if column != "name"
    )
    + ")"
)
_VALUES = ", ".join(f"%({column})s" for column in _COLUMNS)
_INSERT_NEW = (
    f"INSERT INTO {TABLE} ({', '.join(_COLUMNS)}) VALUES ({_VALUES}) ON CONFLICT (name) DO NOTHING"
)
_UPDATE = (
    f"UPDATE {TABLE} SET "
    + ", ".join(f"{column} = %({column})s" for column in _COLUMNS if column != "name")
    + " WHERE name = %(name)s"
)


class PostgresPlanStorage:
    """Plans in a PostgreSQL table (created if missing), safe across threads and processes.

    `url_or_pool` is a `postgresql://` URL (the storage opens a pool of at most
    `max_connections` and closes it in `close()`) or a `psycopg_pool.ConnectionPool` you own.
    """

    def __init__(self, url_or_pool: str | ConnectionPool, *, max_connections: int = 4) -> None:
        self._owns_pool = isinstance(url_or_pool, str)
        if isinstance(url_or_pool, str):
            settings = _connect_settings(url_or_pool)
            self._label = f"database {settings.get('dbname', '')!r} on {settings.get('host', '')}"
            with self._failures_reported():
                with psycopg.connect(url_or_pool, **_timeout(settings)) as conn:
                    self._create_table(conn)
                self.pool: ConnectionPool = ConnectionPool(
                    url_or_pool,
                    min_size=1,
                    max_size=max_connections,
                    kwargs={"autocommit": True, **_timeout(settings)},
                    check=ConnectionPool.check_connection,
                    open=True,
                )
        else:
            self._label = f"pool {url_or_pool.name}"
            self.pool = url_or_pool
            with self._failures_reported(), self.pool.connection() as conn:
                self._create_table(conn)

    def __repr__(self) -> str:
        return f"PostgresPlanStorage({self._label})"

    def close(self) -> None:
        """Close the pool this storage opened (a pool passed in is left to its owner)."""
        if self._owns_pool:
            self.pool.close()

    def __enter__(self) -> PostgresPlanStorage:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def get(self, name: str) -> Plan | None:
        """The named plan, None if there is no row, PlanCorrupt if the row is malformed."""
        with self._cursor(write=False) as cursor:
            return self._select(cursor, name, lock=False)

    def upsert(self, update: PlanUpdate) -> Plan:
        """Create or update a plan in one transaction (see the module docstring)."""
        with self._cursor(write=True) as cursor:
            while True:
                current = self._select(cursor, update.name, lock=True)
                plan = apply_update(current, update)
                cursor.execute(_INSERT_NEW if current is None else _UPDATE, plan.model_dump())
                if cursor.rowcount == 1:
                    return plan
                # Created (or deleted) by another writer since the read: decide again.

    def list(self) -> PlanListing:
        """Every readable plan; a malformed row becomes a warning naming it."""
        with self._cursor(write=False) as cursor:
            rows = cursor.execute(f"SELECT * FROM {TABLE} ORDER BY name").fetchall()
        return listing_from_rows(rows)

    def delete(self, name: str, expected_revision: int | None = None) -> bool:
        """Remove a plan's row; False if there was none."""
        with self._cursor(write=True) as cursor:
            if not may_delete(name, expected_revision, partial(self._select, cursor, lock=True)):
                return False
            cursor.execute(f"DELETE FROM {TABLE} WHERE name = %s", (name,))
            return True

    @staticmethod
    def _select(cursor: psycopg.Cursor[DictRow], name: str, *, lock: bool) -> Plan | None:
        query = f"SELECT * FROM {TABLE} WHERE name = %s" + (" FOR UPDATE" if lock else "")
        row = cursor.execute(query, (validate_name(name),)).fetchone()
        return None if row is None else decode_plan(name, row)

    @staticmethod
    def _create_table(conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))
            conn.execute(_SCHEMA)

    @contextmanager
    def _cursor(self, *, write: bool) -> Iterator[psycopg.Cursor[DictRow]]:
        """A cursor; for a write, in one transaction committed on success, rolled back on any
        error (a read is one statement: the pool's connections are in autocommit mode)."""
        with self._failures_reported(), self.pool.connection() as conn:
            with (
                conn.transaction() if write else nullcontext(),
                conn.cursor(row_factory=dict_row) as cursor,
            ):
                yield cursor

    @contextmanager
    def _failures_reported(self) -> Iterator[None]:
        """Turn database failures into PlanStorageError naming the database."""
        try:
            yield
        except psycopg.Error as exc:
            detail = " ".join(str(exc).split())
            raise PlanStorageError(f"plan storage in {self._label} failed: {detail}") from exc


def _connect_settings(url: str) -> dict[str, Any]:
    try:
        return conninfo_to_dict(url)
    except psycopg.Error as exc:
        raise PlanStorageError(f"not a PostgreSQL URL: {' '.join(str(exc).split())}") from exc


def _timeout(settings: dict[str, Any]) -> dict[str, Any]:
    """Connection keywords: a connect timeout unless the URL sets one."""
    return {} if "connect_timeout" in settings else {"connect_timeout": CONNECT_TIMEOUT_SECONDS}
