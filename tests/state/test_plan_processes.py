"""Real processes: concurrent writers across processes, and a writer killed with SIGKILL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from replan.state.fileio import LOCK_FILE
from replan.state.plans import PlanUpdate
from tests.support.kill_gates import kill_at_gate
from tests.support.plan_backends import PERSISTENT_BACKENDS, Backend
from tests.support.plan_child import CRASH_PLANS, CRASH_VERSION, MOMENTS, versioned_content

pytestmark = pytest.mark.slow  # real processes

ROOT = Path(__file__).resolve().parents[2]


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.plan_child", *args],
        cwd=ROOT,
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


@pytest.mark.parametrize(
    ("backend", "moment"),
    [(kind, moment) for kind, moments in MOMENTS.items() for moment in moments],
    indirect=["backend"],
)
def test_a_writer_killed_mid_write_leaves_a_whole_version(
    backend: Backend, moment: str, tmp_path: Path
) -> None:
    size, gate = 1_000_000, tmp_path / "gate"
    crash = spawn("crash", backend.kind, str(backend.place), str(size), moment, str(gate))
    kill_at_gate(crash, gate)
    if backend.kind == "filesystem":  # the new version of p1 was on its way in a temporary file
        (temporary,) = (tmp_path / "plans").glob(".p1.json.*.tmp")
        text = temporary.read_text()
        assert f'"revision": {CRASH_VERSION},' in text
        if moment == "half-written":
            with pytest.raises(ValueError):
                json.loads(text)
        else:
            assert json.loads(text)["content"] == versioned_content(CRASH_VERSION, size)

    storage = backend.open()
    listing = storage.list()
    assert listing.warnings == []
    assert [plan.name for plan in listing.plans] == list(CRASH_PLANS)
    expected = {"p0": CRASH_VERSION, "p1": CRASH_VERSION - 1}  # p1 died on its way to 3
    for name, version in expected.items():
        plan = storage.get(name)
        assert plan is not None
        assert (plan.revision, plan.content) == (version, versioned_content(version, size))
        storage.upsert(PlanUpdate(name=name, content="after the crash"))
    if backend.kind == "filesystem":  # the next writes swept up the killed writer's temporary file
        assert sorted(os.listdir(tmp_path / "plans")) == [LOCK_FILE, "p0.json", "p1.json"]
