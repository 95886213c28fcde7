"""Build and damage each plan storage backend the same way in tests and child processes."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from replan.state.plans import (
    FilesystemPlanStorage,
    InMemoryPlanStorage,
    PlanStorage,
    SqlitePlanStorage,
)

if TYPE_CHECKING:
    import pytest

BACKENDS = ("memory", "filesystem", "sqlite", "postgres")
PERSISTENT_BACKENDS = ("filesystem", "sqlite", "postgres")


def open_storage(kind: str, place: str | Path) -> PlanStorage:
    """A storage of `kind` kept in `place`: a folder, or for "postgres" a database URL (the same
    place reopens the same plans)."""
    if kind == "memory":
        return InMemoryPlanStorage()
    if kind == "filesystem":
        return FilesystemPlanStorage(Path(place) / "plans")
    if kind == "sqlite":
        return SqlitePlanStorage(Path(place) / "plans.db")
    if kind == "postgres":
        from replan.state.plans import PostgresPlanStorage

        return PostgresPlanStorage(str(place))
    raise ValueError(f"unknown backend {kind!r}")


def close_storage(storage: PlanStorage) -> None:
    """Release what a storage holds open (a PostgreSQL pool); the others hold nothing."""
    close = getattr(storage, "close", None)
    if close is not None:
        close()


@dataclass
class Backend:
    """A backend under test: its kind and place; `close()` closes every storage it opened."""

    kind: str
    place: str | Path
    opened: list[PlanStorage] = field(default_factory=list)

    @classmethod
    def for_test(cls, kind: str, request: pytest.FixtureRequest, folder: Path) -> Backend:
        """The backend of `kind` for one test: in `folder`, or in a fresh PostgreSQL database
        (the `postgres_url` fixture: skipped when there is no server)."""
        postgres = kind == "postgres"
        return cls(kind, request.getfixturevalue("postgres_url") if postgres else folder)

    def open(self) -> PlanStorage:
        """A storage on this backend's place."""
        storage = open_storage(self.kind, self.place)
        self.opened.append(storage)
        return storage

    def close(self) -> None:
        for storage in self.opened:
            close_storage(storage)


def corrupt(storage: PlanStorage, name: str) -> None:
    """Damage the stored copy of existing plan `name` so that it no longer decodes."""
    if isinstance(storage, FilesystemPlanStorage):
        storage.path_of(name).write_text('{"name": "' + name + '", "revision": ')
    elif isinstance(storage, SqlitePlanStorage):
        with sqlite3.connect(storage.path) as conn:
            conn.execute("UPDATE plans SET revision = 'garbage' WHERE name = ?", (name,))
        conn.close()
    elif type(storage).__name__ == "PostgresPlanStorage":
        from replan.state.plans.postgres import TABLE, PostgresPlanStorage

        assert isinstance(storage, PostgresPlanStorage)
        with storage.pool.connection() as conn:  # a revision no plan can have
            conn.execute(f"UPDATE {TABLE} SET revision = 0 WHERE name = %s", (name,))
    else:
        raise TypeError(f"{storage!r} keeps live objects and cannot be damaged")
