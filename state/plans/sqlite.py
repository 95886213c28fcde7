"""SQLite plan storage: every plan in one database file, shared safely between processes.

Each write runs in one `BEGIN IMMEDIATE` transaction (the revision check, the bump and the
write together), and every connection waits up to `busy_timeout` seconds for another writer
instead of failing with "database is locked". The database uses WAL, so readers never block
writers. The file is created 0600.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from replan.state.fileio import PRIVATE_FILE_MODE, ensure_private_dir
from replan.state.plans.model import (
    Plan,
    PlanListing,
    PlanStorageError,
    PlanUpdate,
    validate_name,
)
from replan.state.plans.storage import apply_update, decode_plan, listing_from_rows, may_delete

_COLUMNS = tuple(Plan.model_fields)
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS plans (
    name TEXT PRIMARY KEY,
    {", ".join(f"{column} NOT NULL" for column in _COLUMNS if column != "name")}
)"""
_UPSERT = (
    f"INSERT OR REPLACE INTO plans ({', '.join(_COLUMNS)}) "
    f"VALUES ({', '.join(':' + column for column in _COLUMNS)})"
)


class SqlitePlanStorage:
    """Plans as rows of one SQLite table; the file and its folder are created if missing."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        try:
            ensure_private_dir(self.path.parent)
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE))
        except OSError as exc:
            raise PlanStorageError(f"cannot create the plan database {self.path}: {exc}") from exc
        with self._connection() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)

    def __repr__(self) -> str:
        return f"SqlitePlanStorage({str(self.path)!r})"

    def get(self, name: str) -> Plan | None:
        """The named plan, None if there is no row, PlanCorrupt if the row is malformed."""
        with self._connection() as conn:
            return self._select(conn, name)

    def upsert(self, update: PlanUpdate) -> Plan:
        """Create or update a plan in one write transaction."""
        with self._transaction() as conn:
            plan = apply_update(self._select(conn, update.name), update)
            conn.execute(_UPSERT, plan.model_dump())
            return plan

    def list(self) -> PlanListing:
        """Every readable plan; a malformed row becomes a warning naming it."""
        with self._connection() as conn:
            rows = conn.execute("SELECT * FROM plans ORDER BY name").fetchall()
        return listing_from_rows(rows)

    def delete(self, name: str, expected_revision: int | None = None) -> bool:
        """Remove a plan's row; False if there was none."""
        with self._transaction() as conn:
            if not may_delete(name, expected_revision, lambda key: self._select(conn, key)):
                return False
            conn.execute("DELETE FROM plans WHERE name = ?", (name,))
            return True

    @staticmethod
    def _select(conn: sqlite3.Connection, name: str) -> Plan | None:
        row = conn.execute("SELECT * FROM plans WHERE name = ?", (validate_name(name),)).fetchone()
        return None if row is None else decode_plan(name, row)

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """A fresh autocommit connection (so any thread or process may use the storage)."""
        try:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
            try:
                conn.row_factory = sqlite3.Row
                yield conn
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise PlanStorageError(f"plan database {self.path} failed: {exc}") from exc

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction taken up front, committed on success, rolled back otherwise."""
        with self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
