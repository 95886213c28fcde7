"""Two `replan run` processes on one database (a SQLite file or PostgreSQL), at the same time,
both finish."""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from replan.testing import Reply, ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, finish_all, invoke, start_cli

pytestmark = pytest.mark.slow  # real processes

START_UP_SECONDS = 180
"""How long one run may wait for the other to reach its planner: a CLI start-up took over a
minute on a 2-core machine busy compiling (seen 3 times in 3 under that load, never idle)."""


def _topic(request: dict[str, Any]) -> str:
    text = str(request["messages"])
    match = re.search(r"\[(alpha|beta)[a-z0-9 ]*\]|\b(Alpha|Beta) run", text)
    assert match, text
    return (match[1] or match[2]).lower()


class Together:
    """Holds each run's planner requests until both runs have sent one, then answers slowly.

    The two processes start at different speeds; meeting at the planner and slowing every
    answer a little makes their checkpoint writes interleave. Runs are told apart by their
    objective, so a run that asks its planner twice never meets itself.
    """

    def __init__(self) -> None:
        self.arrived = {name: threading.Event() for name in ("alpha", "beta")}

    def __call__(self, request: dict[str, Any]) -> Reply:
        if script.classify(request).role == "planner":
            self.arrived[_topic(request)].set()
            for event in self.arrived.values():
                assert event.wait(timeout=START_UP_SECONDS), "the other run never asked its planner"
        time.sleep(0.02)
        return script.respond(request)


def test_two_processes_share_one_database(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    runs_db: list[str],
) -> None:
    with ScriptedOpenAIServer(Together()) as server:
        runs = {
            name: start_cli(
                server,
                tmp_path,
                "run",
                *PLANNED,
                f"{name.title()} run in 6 steps",
                "--thread-id",
                name,
                *runs_db,
            )
            for name in ("alpha", "beta")
        }
        outcomes = finish_all(runs, START_UP_SECONDS)
        topics = [_topic(r) for r in server.requests]
    for name, outcome in outcomes.items():
        assert outcome.code == 0, outcome.err
        assert "locked" not in outcome.err
        assert f"All 6 steps of [{name} run in 6 steps] are done" in outcome.out
    switches = sum(a != b for a, b in itertools.pairwise(topics))
    assert switches >= 4, f"the runs did not overlap: {topics}"
    monkeypatch.chdir(tmp_path)
    listed = json.loads(invoke(capsys, "threads", "--json", *runs_db).out)
    assert sorted((run["thread_id"], run["status"], run["objective"]) for run in listed) == [
        ("alpha", "finished", "Alpha run in 6 steps"),
        ("beta", "finished", "Beta run in 6 steps"),
    ]
