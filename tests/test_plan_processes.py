"""Real processes: concurrent writers across processes, and a writer killed with SIGKILL."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from replan.state.plans import PlanUpdate
from tests.plan_support.backends import PERSISTENT_BACKENDS, open_storage
from tests.plan_support.child import CRASH_PLANS, versioned_content

CHILD = Path(__file__).parent / "plan_support" / "child.py"


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("kind", PERSISTENT_BACKENDS)
def test_four_processes_at_the_same_revision_have_exactly_one_winner(
    kind: str, tmp_path: Path
) -> None:
    storage = open_storage(kind, tmp_path)
    storage.upsert(PlanUpdate(name="shared", content="base"))
    children = [spawn("race", kind, str(tmp_path), "shared", "1", f"p{i}") for i in range(4)]
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


@pytest.mark.parametrize("kind", PERSISTENT_BACKENDS)
@pytest.mark.parametrize("round_", range(2))
def test_a_writer_killed_mid_write_leaves_a_whole_version(
    kind: str, round_: int, tmp_path: Path
) -> None:
    size = 1_000_000
    child = spawn("crash", kind, str(tmp_path), str(size))
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "1", child.stderr
    delay = random.uniform(0.0, 0.3)
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    last_done = [1, *map(int, out.split())][-1]  # the child printed "1" before the kill

    storage = open_storage(kind, tmp_path)
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
    if kind == "filesystem":  # the next writes swept up the killed writer's temporary files
        assert sorted(os.listdir(tmp_path / "plans")) == [".lock", "p0.json", "p1.json"]
