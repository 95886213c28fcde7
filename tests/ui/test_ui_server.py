"""`replan ui` without a browser: what its API shows of stored and running runs, an approval
given through it, and the requests it refuses."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from replan.cli.output import ExitCode
from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.cli_harness import (
    PLANNED,
    REPLAN,
    cli_env,
    finish,
    run_cli,
    start_cli,
)
from tests.support.pg_support import fresh_schema
from tests.support.ui_support import HeldAfterCall, Ui, serving_ui, stored_run

pytestmark = pytest.mark.slow
TOOLS = ("--tools", "./shop.py:TOOLS")


def _steps(ui: Ui, thread: str) -> list[tuple[int, str]]:
    status, run = ui.get(f"/api/threads/{thread}")
    assert status == 200, run
    return [(step["id"], step["status"]) for step in run["steps"]]


def test_the_api_lists_threads_and_draws_a_finished_run(work: Path) -> None:
    with ScriptedOpenAIServer(script.respond) as server:
        stored_run(server, work, "diamond", *PLANNED, "Ship it in 4 diamond steps")
        stored_run(server, work, "waits", *PLANNED, "--approve-plan", "Ship it in 2 steps")
    with serving_ui(work / "runs.sqlite", work) as ui:
        status, listed = ui.get("/api/threads")
        assert status == 200 and listed["db"] == str(work / "runs.sqlite")
        shown = {t["thread_id"]: t["status"] for t in listed["threads"]}
        assert shown == {"diamond": "finished", "waits": "waiting_for_approval"}

        status, run = ui.get("/api/threads/diamond")
        steps = {step["id"]: step for step in run["steps"]}
        assert [(i, s["status"], s["depends_on"]) for i, s in steps.items()] == [
            (1, "done", []),
            (2, "done", [1]),
            (3, "done", [1]),
            (4, "done", [2, 3]),
        ]
        assert steps[4]["result"] == "Executed step 4: RESULT 4/4"
        assert run["response"].startswith("All 4 steps") and run["usage"]["total"]["calls"] == 8
        assert run["seconds"]["planner"] > 0 and run["seconds"]["executor"] > 0
        assert ui.get("/api/threads/nothing")[0] == 404


def test_the_api_follows_a_run_in_another_process_with_its_calls(work: Path) -> None:
    held = HeldAfterCall()
    with ScriptedOpenAIServer(script.respond) as server:
        stored_run(server, work, "other", *PLANNED, "Ship it in 1 steps")  # a thread beside it
    with ScriptedOpenAIServer(held) as server:
        running = start_cli(
            server, work, "run", "--db", "runs.sqlite", "--thread-id", "live", *PLANNED,
            *TOOLS, "Ship it in 2 steps",
        )  # fmt: skip
        try:
            assert held.reached.wait(60), finish(running, timeout=5)
            with serving_ui(work / "runs.sqlite", work) as ui:
                status, listed = ui.get("/api/threads")
                assert {t["thread_id"]: t["status"] for t in listed["threads"]}["live"] == "running"
                _, run = ui.get("/api/threads/live")
                first = run["steps"][0]
                assert (first["id"], first["status"]) == (1, "running")
                assert first["calls"] == [
                    {"name": "price", "args": {"item": "A"}, "result": "A costs 4.20",
                     "error": False}
                ]  # fmt: skip
                assert _steps(ui, "live")[1] == (2, "pending")
                held.release.set()
                assert finish(running).code == ExitCode.OK
                _, run = ui.get("/api/threads/live")
                assert [s["status"] for s in run["steps"]] == ["done", "done"]
                assert run["steps"][0]["calls"][0]["result"] == "A costs 4.20"  # kept
                assert run["status"] == "finished"
        finally:
            held.release.set()
            if running.poll() is None:
                running.kill()


def test_a_plan_is_approved_edited_or_rejected_through_the_api(work: Path) -> None:
    with ScriptedOpenAIServer(script.respond) as server:
        for thread in ("approve", "edit", "reject"):
            stored_run(server, work, thread, *PLANNED, "--approve-plan", "Ship it in 2 steps")
        with serving_ui(work / "runs.sqlite", work, cli_env(server)) as ui:
            assert ui.post("/api/threads/approve/review", {"decision": "maybe"})[0] == 409
            assert ui.post("/api/threads/approve/review", {"decision": "approve"})[0] == 202
            edited = {"decision": "edit", "steps": ["Write the notes", "Publish them"]}
            assert ui.post("/api/threads/edit/review", edited)[0] == 202
            assert ui.post("/api/threads/reject/review", {"decision": "reject"})[0] == 202
            codes = {"approve": ExitCode.OK, "edit": ExitCode.OK, "reject": ExitCode.REJECTED}
            ended = {thread: _answered(ui, thread, code) for thread, code in codes.items()}
    assert ended["approve"]["status"] == "finished"
    assert [s["text"] for s in ended["edit"]["steps"]] == ["Write the notes", "Publish them"]
    assert ended["reject"]["status"] == "rejected"


def _answered(ui: Ui, thread: str, code: int) -> dict[str, Any]:
    """The thread once the `replan resume` the page started has ended (with exit `code`)."""
    for _ in range(600):
        _, run = ui.get(f"/api/threads/{thread}")
        if run["answer"] and not run["answer"]["running"]:
            assert run["answer"]["exit_code"] == code, run["answer"]
            return dict(run)
        time.sleep(0.1)
    raise AssertionError(f"the answer to {thread} did not end")


def test_a_finished_run_has_no_plan_to_answer(work: Path) -> None:
    with ScriptedOpenAIServer(script.respond) as server:
        stored_run(server, work, "done", *PLANNED, "Ship it in 1 steps")
    with serving_ui(work / "runs.sqlite", work) as ui:
        status, refused = ui.post("/api/threads/done/review", {"decision": "approve"})
    assert status == 409 and "no plan waiting" in refused["error"]


def test_requests_without_the_token_or_from_elsewhere_are_refused(work: Path) -> None:
    with ScriptedOpenAIServer(script.respond) as server:
        stored_run(server, work, "t", *PLANNED, "Ship it in 1 steps")
    with serving_ui(work / "runs.sqlite", work) as ui:
        assert ui.request("GET", "/", None, {})[0] == 403  # the page itself needs the token
        assert ui.request("GET", "/api/threads", None, {})[0] == 403
        assert ui.get("/api/threads", **{"X-Replan-Token": "guess"})[0] == 403
        assert ui.get("/api/threads", Host="attacker.example")[0] == 403  # DNS rebinding
        assert ui.get("/api/threads", Origin="http://attacker.example")[0] == 403
        assert ui.post("/api/threads/t/review", {}, Origin="http://attacker.example")[0] == 403
        assert ui.get("/api/threads")[0] == 200


def test_the_command_says_in_one_line_what_it_cannot_serve(tmp_path: Path) -> None:
    missing = subprocess.run(
        [REPLAN, "ui", "--db", str(tmp_path / "none.sqlite")],
        capture_output=True, text=True, env=cli_env(), timeout=60,
    )  # fmt: skip
    assert missing.returncode == ExitCode.NO_SUCH_RUN
    assert missing.stderr.strip().splitlines() == [
        f"replan: no database at {tmp_path / 'none.sqlite'} (replan run creates it)"
    ]
    bad_port = subprocess.run(
        [REPLAN, "ui", "--port", "70000"], capture_output=True, text=True, env=cli_env()
    )
    assert bad_port.returncode == ExitCode.USAGE and "Traceback" not in bad_port.stderr


def test_runs_in_postgresql_show_with_the_password_masked(work: Path) -> None:
    with fresh_schema() as url:
        parts = urlsplit(url)  # the test server trusts every login: any password is taken
        netloc = f"{parts.username}:hunter2@{parts.netloc.rpartition('@')[2]}"
        secret = urlunsplit(parts._replace(netloc=netloc))
        with ScriptedOpenAIServer(script.respond) as server:
            done = run_cli(server, work, "run", "--db", secret, "--thread-id", "pg", *PLANNED,
                           "Ship it in 2 steps")  # fmt: skip
            assert done.code == ExitCode.OK, done.err
        with serving_ui(secret, work) as ui:
            status, listed = ui.get("/api/threads")
            _, run = ui.get("/api/threads/pg")
        assert status == 200 and [t["thread_id"] for t in listed["threads"]] == ["pg"]
        assert "hunter2" not in str(listed) and ":***@" in listed["db"]
        assert [step["status"] for step in run["steps"]] == ["done", "done"]
