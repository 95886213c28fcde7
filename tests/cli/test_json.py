"""`replan` for scripts: `--json` documents, objectives from stdin or a file, `--version`."""

from __future__ import annotations

import json
import re
from datetime import datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from replan.testing import Reply, ScriptedOpenAIServer, http_error, tool_call
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, Outcome, run_cli
from tests.support.readme import doc, section_text

pytestmark = pytest.mark.slow  # real processes

ANSWER_2 = "All 2 steps of [ship it in 2 steps] are done: RESULT 1/2, RESULT 2/2"
STEPS_2 = [script.step_text(i, 2, "ship it in 2 steps") for i in (1, 2)]


def _with_a_task(request: dict[str, Any]) -> Reply:
    first_turn = request["messages"][-1]["role"] != "tool"
    if script.classify(request) == script.Call("executor", 1) and first_turn:
        return tool_call("TaskCreate", {"subject": "Write it", "description": "the report"})
    return script.respond(request)


def _document(outcome: Outcome) -> Any:
    """The JSON on stdout: exactly one document."""
    return json.loads(outcome.out)


def _documented_example() -> dict[str, Any]:
    """The `--json` example of docs/cli.md."""
    section = section_text("JSON output", doc("cli.md"))
    (block,) = re.findall(r"^```json\n(.*?)^```", section, re.M | re.S)
    example: dict[str, Any] = json.loads(block)
    return example


def test_run_and_show_print_one_json_document(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(_with_a_task) as server:
        done = run_cli(
            server,
            tmp_path,
            "run",
            *PLANNED,
            "Ship it in 2 steps",
            "--thread-id",
            "j",
            "--json",
        )
    assert done.code == 0, done.err
    run = _document(done)
    assert run.keys() == _documented_example().keys()
    assert {key: run[key] for key in ("thread_id", "status", "stop_reason", "nodes")} == {
        "thread_id": "j",
        "status": "finished",
        "stop_reason": "",
        "nodes": [],
    }
    assert run["objective"] == "Ship it in 2 steps" and run["plan"] == []
    assert [done["step"] for done in run["executed_steps"]] == STEPS_2
    assert run["executed_steps"][1]["result"] == "Executed step 2: RESULT 2/2"
    assert [(t["id"], t["subject"], t["status"]) for t in run["tasks"]] == [
        ("1", "Write it", "pending")
    ]
    assert (run["response"], run["review"], run["error"]) == (ANSWER_2, None, None)
    assert run["settings"]["base_url"] == server.base_url and "api_key" not in run["settings"]
    started, updated = (datetime.fromisoformat(run[key]) for key in ("started_at", "updated_at"))
    assert started < updated
    shown = _document(run_cli(None, tmp_path, "show", "--thread-id", "j", "--json"))
    assert shown == run


def test_a_failed_run_says_why_in_json_and_in_show(tmp_path: Path) -> None:
    def executor_down(request: dict[str, Any]) -> Reply:
        if script.classify(request).role == "executor":
            return http_error(500, "out of memory")
        return script.respond(request)

    with ScriptedOpenAIServer(executor_down) as server:
        args = ("Ship it in 2 steps", "--thread-id", "f", "--max-retries", "0", "--json")
        failed = run_cli(server, tmp_path, "run", *PLANNED, *args)
    assert failed.code == 3
    run = _document(failed)
    error = {
        "node": "executor",
        "type": "ModelUnavailableError",
        "message": "the model server answered HTTP 500: out of memory",
    }
    assert (run["status"], run["nodes"], run["error"]) == ("failed", ["executor"], error)
    assert [step["step"] for step in run["plan"]] == STEPS_2 and run["response"] == ""
    assert _document(run_cli(None, tmp_path, "show", "--thread-id", "f", "--json")) == run
    shown = run_cli(None, tmp_path, "show", "--thread-id", "f").out
    assert "Status: failed at executor\nError: the model server answered HTTP 500: out of " in shown
    assert "memory (ModelUnavailableError)\n" in shown and "('" not in shown


def test_waiting_runs_and_threads_in_json(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(script.respond) as server:
        done = run_cli(
            server,
            tmp_path,
            "run",
            *PLANNED,
            "Ship it in 2 steps",
            "--thread-id",
            "first",
        )
        assert done.code == 0
        args = ("Ship it in 2 steps", "--thread-id", "second", "--approve-plan", "--json")
        waiting = run_cli(server, tmp_path, "run", *PLANNED, *args)
    assert waiting.code == 4
    run = _document(waiting)
    assert run["status"] == "waiting_for_approval" and run["review"]["plan"] == STEPS_2
    assert "approve" in run["review"]["question"]
    listed = _document(run_cli(None, tmp_path, "threads", "--json"))
    assert [(r["thread_id"], r["status"]) for r in listed] == [
        ("second", "waiting_for_approval"),
        ("first", "finished"),
    ]
    assert listed[0] == run


@pytest.mark.parametrize("source", ["stdin", "file"])
def test_an_objective_of_a_megabyte_from_stdin_or_a_file(tmp_path: Path, source: str) -> None:
    """Too long for a command line; stored exactly, non-ASCII and line breaks included."""
    objective = "Ship it in 1 steps.\n" + "Détails: ünïcödé ✓ " * 60_000
    data = objective.encode()
    assert len(data) > 2**20
    with ScriptedOpenAIServer(script.respond) as server:
        if source == "stdin":
            done = run_cli(
                server,
                tmp_path,
                "run",
                *PLANNED,
                "-",
                "--json",
                "--quiet",
                input=data,
            )
        else:
            (tmp_path / "objective.md").write_bytes(data)
            done = run_cli(
                server,
                tmp_path,
                "run",
                *PLANNED,
                "--objective-file",
                "objective.md",
                "--json",
            )
    assert done.code == 0, done.err
    assert _document(done)["objective"] == objective


def test_version(tmp_path: Path) -> None:
    shown = run_cli(None, tmp_path, "--version")
    assert (shown.code, shown.out) == (0, f"replan {version('replan')}\n")
