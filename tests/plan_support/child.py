"""A plan-storage client run as a separate process by the concurrency and crash tests.

child.py race KIND PLACE NAME REVISION TAG   prints "ready", waits for a line on stdin,
                                             writes once at REVISION, prints won/conflict
child.py crash KIND PLACE SIZE              rewrites plans p0 and p1 forever with
                                             `versioned_content(i, SIZE)`, printing each i

PLACE is the folder, or for "postgres" the database URL, of `open_storage`.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
if __name__ == "__main__":
    # Load only the plan layer: `state/__init__` also imports LangGraph for the task layer
    # (about a second per process), which these short-lived children never use.
    sys.modules["state"] = types.ModuleType("state")
    sys.modules["state"].__path__ = [str(ROOT / "state")]

from replan.state.plans import PlanConflict, PlanUpdate  # noqa: E402
from tests.plan_support.backends import close_storage, open_storage  # noqa: E402

CRASH_PLANS = ("p0", "p1")


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


def crash(kind: str, place: str, size: str) -> None:
    storage = open_storage(kind, place)
    version = 0
    while True:
        version += 1
        for name in CRASH_PLANS:
            storage.upsert(PlanUpdate(name=name, content=versioned_content(version, int(size))))
        print(version, flush=True)


if __name__ == "__main__":
    commands: dict[str, Callable[..., None]] = {"race": race, "crash": crash}
    commands[sys.argv[1]](*sys.argv[2:])
