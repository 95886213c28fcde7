"""Build and damage each plan storage backend the same way in tests and child processes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from replan.state.plans import (
    FilesystemPlanStorage,
    InMemoryPlanStorage,
    PlanStorage,
    SqlitePlanStorage,
)

BACKENDS = ("memory", "filesystem", "sqlite")
PERSISTENT_BACKENDS = ("filesystem", "sqlite")


def open_storage(kind: str, folder: Path) -> PlanStorage:
    """A storage of `kind` kept under `folder` (the same folder reopens the same plans)."""
    if kind == "memory":
        return InMemoryPlanStorage()
    if kind == "filesystem":
        return FilesystemPlanStorage(folder / "plans")
    if kind == "sqlite":
        return SqlitePlanStorage(folder / "plans.db")
    raise ValueError(f"unknown backend {kind!r}")


def corrupt(storage: PlanStorage, name: str) -> None:
    """Damage the stored copy of existing plan `name` so that it no longer decodes."""
    if isinstance(storage, FilesystemPlanStorage):
        storage.path_of(name).write_text('{"name": "' + name + '", "revision": ')
    elif isinstance(storage, SqlitePlanStorage):
        with sqlite3.connect(storage.path) as conn:
            conn.execute("UPDATE plans SET revision = 'garbage' WHERE name = ?", (name,))
        conn.close()
    else:
        raise TypeError(f"{storage!r} keeps live objects and cannot be damaged")
