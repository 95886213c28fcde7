"""A plan-storage client run as a separate process by the concurrency and crash tests.

    python -m tests.support.plan_child race KIND PLACE NAME REVISION TAG
        prints "ready", waits for a line on stdin, writes once at REVISION, prints won/conflict
    python -m tests.support.plan_child crash KIND PLACE SIZE MOMENT GATE
        writes versions 1, 2, ... of plans p0 then p1 (`versioned_content(i, SIZE)`); while
        writing p1 at version `CRASH_VERSION` it stops at MOMENT, at the gate
        (`tests.support.kill_gates.hold_here`), to be killed there

PLACE is the folder, or for "postgres" the database URL, of `open_storage`.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any
from unittest import mock

from replan.state.plans import PlanConflict, PlanUpdate
from tests.support.kill_gates import hold_here
from tests.support.plan_backends import close_storage, open_storage

CRASH_PLANS = ("p0", "p1")
CRASH_VERSION = 3
MOMENTS = {
    "filesystem": ("half-written", "before-rename"),
    "sqlite": ("before-commit",),
    "postgres": ("before-commit",),
}
"""Where a writer can die: its temporary file half written, or complete but not renamed into
place (filesystem); its transaction written but not committed (databases)."""


def versioned_content(version: int, size: int) -> str:
    """A large body whose prefix tells which version it is, so a torn mix is detectable."""
    return f"{version}:" + chr(ord("a") + version % 26) * size + f":{version}"


def race(kind: str, place: str, name: str, revision: str, tag: str) -> None:
    storage = open_storage(kind, place)
    print("ready", flush=True)
    sys.stdin.readline()
    update = PlanUpdate(
        name=name, content=f"from {tag}", author=tag, expected_revision=int(revision)
    )
    try:
        storage.upsert(update)
        print("won", flush=True)
    except PlanConflict:
        print("conflict", flush=True)
    finally:
        close_storage(storage)


class _HalfWriter:
    """A file that writes half of what it is given, flushes it to disk, and holds."""

    def __init__(self, handle: Any, gate: Path) -> None:
        self.handle, self.gate = handle, gate

    def __enter__(self) -> _HalfWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()

    def write(self, text: str) -> None:
        self.handle.write(text[: len(text) // 2])
        self.handle.flush()
        os.fsync(self.handle.fileno())
        hold_here(self.gate)


def _arm(
    kind: str, moment: str, gate: Path, armed: Callable[[], bool]
) -> AbstractContextManager[Any]:
    """Within the block, the storage's next write once `armed()` stops at `moment`."""
    if moment == "half-written":
        real_fdopen = os.fdopen

        def fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
            handle = real_fdopen(fd, *args, **kwargs)
            return _HalfWriter(handle, gate) if armed() else handle

        return mock.patch.object(os, "fdopen", fdopen)
    if moment == "before-rename":
        real_replace = os.replace

        def replace(source: Any, target: Any) -> None:
            if armed():
                hold_here(gate)
            real_replace(source, target)

        return mock.patch.object(os, "replace", replace)
    if (kind, moment) == ("sqlite", "before-commit"):

        class Connection(sqlite3.Connection):
            def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
                if sql == "COMMIT" and armed():
                    hold_here(gate)
                return super().execute(sql, *args)

        connect = functools.partial(sqlite3.connect, factory=Connection)
        return mock.patch.object(sqlite3, "connect", connect)
    if (kind, moment) == ("postgres", "before-commit"):
        import psycopg

        real_exit = psycopg.Transaction.__exit__

        def leave(transaction: psycopg.Transaction, *exc: Any) -> Any:
            if exc[0] is None and armed():  # the transaction would commit now
                hold_here(gate)
            return real_exit(transaction, *exc)

        return mock.patch.object(psycopg.Transaction, "__exit__", leave)
    raise ValueError(f"unknown moment {moment!r} for {kind}")


def crash(kind: str, place: str, size: str, moment: str, gate: str) -> None:
    storage = open_storage(kind, place)
    writing: tuple[int, str] = (0, "")
    with _arm(kind, moment, Path(gate), lambda: writing == (CRASH_VERSION, CRASH_PLANS[1])):
        for version in range(1, CRASH_VERSION + 1):
            for name in CRASH_PLANS:
                writing = (version, name)
                body = versioned_content(version, int(size))
                storage.upsert(PlanUpdate(name=name, content=body))
    sys.exit(f"wrote version {CRASH_VERSION} without stopping {moment}")


if __name__ == "__main__":
    commands: dict[str, Callable[..., None]] = {"race": race, "crash": crash}
    commands[sys.argv[1]](*sys.argv[2:])
