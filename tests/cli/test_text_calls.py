"""`replan` against a server that writes tool calls as text: progress, show, --no-text-calls."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from replan.testing import Quirks, Reply, ScriptedOpenAIServer, tool_calls
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, invoke, run_cli

ANSWER_1 = "All 1 steps of [ship it in 1 steps] are done: RESULT 1/1"
TAGGED = Quirks(calls_as_text="tagged")


def _with_tasks(request: dict[str, Any]) -> Reply:
    """The step creates a task and lists the tasks in one turn, then reports."""
    first_turn = request["messages"][-1]["role"] != "tool"
    if script.classify(request).role == "executor" and first_turn:
        return tool_calls(
            [("TaskCreate", {"subject": "Write it", "description": "the report"}), ("TaskList", {})]
        )
    return script.respond(request)


@pytest.mark.slow
def test_progress_shows_calls_read_from_text_and_show_counts_them(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(_with_tasks, quirks=TAGGED) as server:
        done = run_cli(
            server,
            tmp_path,
            "run",
            *PLANNED,
            "Ship it in 1 steps",
            "--thread-id",
            "t",
        )
        shown = run_cli(server, tmp_path, "show", "--thread-id", "t")
        document = json.loads(run_cli(server, tmp_path, "show", "--thread-id", "t", "--json").out)
    assert (done.code, done.out.strip()) == (0, ANSWER_1), done.err
    lines = done.err.splitlines()
    planning = lines.index("Planning…")
    assert lines[planning + 1 : planning + 3] == [
        "  ↺ 1 tool call read from the reply's text: plan",
        "the model server sent back as text a call it was forced to make (a named tool_choice "
        "('plan')); asking for decisions as json_schema from now on",
    ]
    step = lines.index("Step 1: Step 1 of 1 [ship it in 1 steps]")
    assert lines[step + 1 : step + 5] == [
        "  ↺ 2 tool calls read from the reply's text: TaskCreate, TaskList",
        '  → TaskCreate(subject="Write it", description="the report")',
        "  → TaskList()",
        "  task #1 created: Write it",
    ]
    assert re.fullmatch(r"Step 1 done in \d+\.\d s: Executed step 1: RESULT 1/1", lines[step + 5])
    # the replanner was asked for JSON: nothing left to read from text
    assert not any("read from the reply's text" in line for line in lines[step + 6 :])
    assert "Tool calls read from the model's text: 3" in shown.out.splitlines()
    assert document["recovered_calls"] == 3
    assert [t["subject"] for t in document["tasks"]] == ["Write it"]


def test_no_text_calls_turns_recovery_off_and_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with ScriptedOpenAIServer(_with_tasks, quirks=TAGGED) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        done = invoke(
            capsys,
            "run",
            *PLANNED,
            "Ship it in 1 steps",
            "--thread-id",
            "t",
            "--no-text-calls",
        )
        shown = invoke(capsys, "show", "--thread-id", "t", "--json")
    # The planner's calls, written as text, are not read: its decisions fall back to a JSON
    # reply; the executor's are not run, so the run ends as making no progress.
    assert done.code == 6, done.err
    assert "carried no decision; asking for decisions as json_schema" in done.err
    assert "Traceback" not in done.err
    document = json.loads(shown.out)
    assert document["settings"]["recover_text_calls"] is False
    assert document["recovered_calls"] == 0
