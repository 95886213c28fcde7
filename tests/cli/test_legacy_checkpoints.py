"""Runs saved by an earlier replan (tests/fixtures/checkpoints_0_1.sql) load and resume."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from replan.testing import ScriptedOpenAIServer
from tests.support.cli_harness import invoke, stored_steps

pytestmark = pytest.mark.slow

DUMP = Path(__file__).parents[1] / "fixtures" / "checkpoints_0_1.sql"


@pytest.fixture
def legacy_db(tmp_path: Path) -> str:
    """A copy of the earlier version's runs database."""
    path = tmp_path / "legacy.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(DUMP.read_text())
    return str(path)


def test_an_earlier_versions_threads_are_listed_with_their_status(
    legacy_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = invoke(capsys, "threads", "--db", legacy_db)
    assert outcome.code == 0, outcome.err
    rows = {line.split()[0]: line for line in outcome.out.splitlines()[1:]}
    assert "finished" in rows["finished"]
    assert "waiting for approval" in rows["waiting"]
    assert "interrupted at executor" in rows["killed"]


def test_a_run_killed_under_an_earlier_version_resumes_with_its_task_list(
    legacy_db: str, server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = invoke(capsys, "resume", "--thread-id", "killed", "--db", legacy_db,
                     "--base-url", server.base_url)  # fmt: skip
    assert outcome.code == 0, outcome.err
    assert "All 3 steps" in outcome.out
    assert stored_steps(["--db", legacy_db], "killed") == [
        f"Step {i} of 3 [the killed run in 3]" for i in (1, 2, 3)
    ]
    shown = invoke(capsys, "show", "--thread-id", "killed", "--db", legacy_db)
    assert "Check the greeting" in shown.out  # the task step 1 created, read back


def test_a_plan_waiting_for_approval_under_an_earlier_version_is_approved(
    legacy_db: str, server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = invoke(capsys, "resume", "--thread-id", "waiting", "--db", legacy_db, "--approve",
                     "--base-url", server.base_url)  # fmt: skip
    assert outcome.code == 0, outcome.err
    assert "All 2 steps of [say goodbye in 2 steps] are done" in outcome.out


def test_a_finished_run_of_an_earlier_version_is_shown(
    legacy_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = invoke(capsys, "show", "--thread-id", "finished", "--db", legacy_db)
    assert outcome.code == 0, outcome.err
    assert "All 2 steps of [say hello in 2 steps] are done" in outcome.out
    assert "Check the greeting" in outcome.out
