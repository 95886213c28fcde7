"""Runs saved by an earlier replan (tests/fixtures/checkpoints_0_1.sql) load and resume."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from replan.testing import ScriptedOpenAIServer
from replan.testing.requests import tool_names
from tests.support.cli_harness import invoke, stored_steps

pytestmark = pytest.mark.slow

DUMP = Path(__file__).parents[1] / "fixtures" / "checkpoints_0_1.sql"


def _restored(dump: Path, path: Path) -> str:
    """The runs database `dump` (a SQL dump) holds, written to `path`."""
    with sqlite3.connect(path) as conn:
        conn.executescript(dump.read_text())
    return str(path)


@pytest.fixture
def legacy_db(tmp_path: Path) -> str:
    """A copy of the earlier version's runs database."""
    return _restored(DUMP, tmp_path / "legacy.sqlite")


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


RELEASE_DUMP = Path(__file__).parents[1] / "fixtures" / "checkpoints_0_2.sql"
RELEASE_SETTINGS = Path(__file__).parents[1] / "fixtures" / "checkpoints_0_2.settings.json"


@pytest.fixture
def release_db(tmp_path: Path) -> str:
    """A copy of the runs database of the last release (settings kept in two copies)."""
    return _restored(RELEASE_DUMP, tmp_path / "release.sqlite")


def test_runs_of_the_last_release_show_the_settings_that_release_showed(
    release_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both copies (the `settings` channel and the checkpoint metadata) were written then; one
    run (`failed`, at its planner) has only the metadata copy."""
    expected = json.loads(RELEASE_SETTINGS.read_text())
    for thread_id, was in expected.items():
        shown = json.loads(invoke(capsys, "show", "--thread-id", thread_id, "--db", release_db,
                                  "--json").out)  # fmt: skip
        assert (shown["status"], shown["settings"]) == (was["status"], was["settings"]), thread_id


def test_a_run_of_the_last_release_resumes_with_its_own_settings(
    release_db: str, server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = invoke(capsys, "resume", "--thread-id", "waiting", "--db", release_db, "--approve",
                     "--base-url", server.base_url)  # fmt: skip
    assert outcome.code == 0, outcome.err
    executors = [r for r in server.requests if "TaskCreate" in tool_names(r)]
    full = [t for t in executors[0]["tools"] if t["function"]["name"] == "TaskCreate"]
    assert len(full[0]["function"]["description"]) > 400  # its task tools: "full"
    shown = json.loads(invoke(capsys, "show", "--thread-id", "waiting", "--db", release_db,
                              "--json").out)  # fmt: skip
    assert shown["settings"]["task_tools"] == "full"
    assert shown["settings"]["decision_mode"] == "json_schema"
    assert shown["settings"]["base_url"] == server.base_url  # given now: changed
