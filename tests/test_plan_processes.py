"""Real processes: concurrent writers across processes, and a writer killed with SIGKILL."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from replan.state.fileio import LOCK_FILE
from replan.state.plans import PlanUpdate
from tests.plan_support.backends import PERSISTENT_BACKENDS, Backend
from tests.plan_support.child import CRASH_PLANS, versioned_content

pytestmark = pytest.mark.slow  # real processes

CHILD = Path(__file__).parent / "plan_support" / "child.py"


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(params=PERSISTENT_BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    backend = Backend.for_test(request.param, request, tmp_path)
    yield backend
    backend.close()


def test_four_processes_at_the_same_revision_have_exactly_one_winner(backend: Backend) -> None:
    storage = backend.open()
    storage.upsert(PlanUpdate(name="shared", content="base"))
    place = str(backend.place)
    children = [spawn("race", backend.kind, place, "shared", "1", f"p{i}") for i in range(4)]
    for child in children:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    for child in children:  # release them together
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    results = [child.communicate(timeout=30) for child in children]
    outcomes = [out.strip() for out, _ in results]
    assert all(child.returncode == 0 for child in children), [err for _, err in results]
    assert sorted(outcomes) == ["conflict", "conflict", "conflict", "won"]
    winner = f"p{outcomes.index('won')}"
    final = storage.get("shared")
    assert final is not None
    assert (final.revision, final.author, final.content) == (2, winner, f"from {winner}")


@pytest.mark.parametrize("round_", range(2))
def test_a_writer_killed_mid_write_leaves_a_whole_version(
    backend: Backend, round_: int, tmp_path: Path
) -> None:
    size = 1_000_000
    child = spawn("crash", backend.kind, str(backend.place), str(size))
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "1", child.stderr
    delay = random.uniform(0.0, 0.3)
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    last_done = [1, *map(int, out.split())][-1]  # the child printed "1" before the kill

    storage = backend.open()
    listing = storage.list()
    assert listing.warnings == [], f"killed after {delay:.3f}s"
    assert [plan.name for plan in listing.plans] == list(CRASH_PLANS)
    for name in CRASH_PLANS:
        plan = storage.get(name)
        assert plan is not None
        version = int(plan.content.split(":", 1)[0])
        assert plan.content == versioned_content(version, size), f"torn {name} after {delay:.3f}s"
        assert last_done <= version <= last_done + 1
        assert plan.revision == version
        storage.upsert(PlanUpdate(name=name, content="after the crash"))
    if backend.kind == "filesystem":  # the next writes swept up the killed writer's temporary files
        assert sorted(os.listdir(tmp_path / "plans")) == [LOCK_FILE, "p0.json", "p1.json"]
