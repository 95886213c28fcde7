"""`replan run` on a thread whose last turn ended is a follow-up; `show` lists the turns."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from replan.cli.output import ExitCode
from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, invoke

pytestmark = pytest.mark.slow

LEGACY = Path(__file__).parents[1] / "fixtures" / "checkpoints_0_1.sql"


def test_a_second_objective_on_a_finished_thread_is_a_follow_up(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = str(tmp_path / "chat.sqlite")
    url = ["--base-url", server.base_url]
    first = invoke(
        capsys,
        "run",
        *PLANNED,
        "Say hello in 2 steps",
        "--thread-id",
        "t1",
        "--db",
        db,
        *url,
    )
    planned = len(server.requests)
    second = invoke(
        capsys,
        "run",
        *PLANNED,
        "Now say goodbye in 2 steps",
        "--thread-id",
        "t1",
        "--db",
        db,
    )

    assert (first.code, second.code) == (0, 0), second.err
    assert "Thread t1, turn 2" in second.err
    assert "say goodbye" in second.out and "say hello" not in second.out
    follow_up = server.requests[planned]
    assert script.classify(follow_up).role == "planner"
    assert first.out.strip() in json.dumps(follow_up["messages"])  # the answer it follows
    shown = invoke(capsys, "show", "--thread-id", "t1", "--db", db)
    assert "Earlier turns:\n  1. Say hello in 2 steps — answered, 2 steps" in shown.out
    assert "Turn 2:\nObjective:\n  Now say goodbye in 2 steps" in shown.out
    as_json = json.loads(invoke(capsys, "show", "--thread-id", "t1", "--db", db, "--json").out)
    assert as_json["turn"] == 2 and as_json["objective"] == "Now say goodbye in 2 steps"
    (earlier,) = as_json["turns"]
    assert earlier["objective"] == "Say hello in 2 steps"
    assert earlier["response"] == first.out.strip()
    assert [done["id"] for done in as_json["executed_steps"]] == [3, 4]  # after turn 1's
    # The follow-up's progress counts its own turn's tokens, as its usage does.
    turn_calls = as_json["usage"]["total"]["calls"]
    assert turn_calls == len(server.requests) - planned
    tokens = [line for line in second.err.splitlines() if line.startswith("Tokens so far")]
    assert tokens[-1].startswith(f"Tokens so far: {turn_calls} model calls:")


def test_a_follow_up_to_a_thread_that_has_not_ended_says_what_to_do_and_changes_nothing(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = str(tmp_path / "chat.sqlite")
    waiting = invoke(capsys, "run", *PLANNED, "Ship it", "--thread-id", "w",
                     "--db", db, "--approve-plan", "--base-url", server.base_url)  # fmt: skip
    assert waiting.code == ExitCode.AWAITING_APPROVAL
    asked = len(server.requests)

    refused = invoke(capsys, "run", *PLANNED, "Something else", "--thread-id", "w", "--db", db)

    assert refused.code == ExitCode.USAGE and refused.out == ""
    assert refused.err.strip() == (
        "replan: thread w has not ended (waiting for approval): continue it with: replan "
        f"resume --thread-id w --db {db}; a follow-up can start once it ends"
    )
    assert len(server.requests) == asked
    still = invoke(capsys, "show", "--thread-id", "w", "--db", db)
    assert "Status: waiting for approval" in still.out and "Something else" not in still.out


def test_a_follow_up_to_a_thread_saved_before_turns_plans_the_new_message_alone(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "legacy.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript(LEGACY.read_text())

    done = invoke(capsys, "run", *PLANNED, "Now wave in 2 steps",
                  "--thread-id", "finished", "--db", str(db),
                  "--base-url", server.base_url)  # fmt: skip

    assert done.code == 0, done.err
    assert "All 2 steps of [now wave in 2 steps] are done" in done.out
    planner = next(r for r in server.requests if script.classify(r).role == "planner")
    said = [(m["role"], m.get("content")) for m in planner["messages"][1:]]
    assert said[0] == ("user", "Say hello in 2 steps")
    assert said[1][0] == "assistant" and "say hello in 2 steps" in said[1][1]
    assert len(said) == 3 and said[2][0] == "user"
    # The new message comes last, alone, with the planner's instruction after it.
    assert said[2][1].startswith("Now wave in 2 steps\n\n") and "Say hello" not in said[2][1]
