"""`replan run/resume/show/threads`: progress, answers, plan approval, errors and exit codes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from replan.graphs.cli import commands as cli
from tests import plan_execute_script as script
from tests.cli_support.harness import invoke, run_cli
from tests.readme import README
from tests.scripted_openai import Reply, ScriptedOpenAIServer, tool_call

ANSWER_2 = "All 2 steps of [ship it in 2 steps] are done: RESULT 1/2, RESULT 2/2"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ScriptedOpenAIServer]:
    """A plan–execute server; the in-process CLI runs in `tmp_path` and talks to it."""
    with ScriptedOpenAIServer(script.respond) as srv:
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("REPLAN_DB", raising=False)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        yield srv


@pytest.mark.slow
def test_console_script_runs_and_prints_progress_and_answer(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    done = run_cli(server, tmp_path, "run", "Ship it in 2 steps")
    assert done.code == 0, done.err
    assert done.out.strip() == ANSWER_2
    lines = done.err.splitlines()
    assert lines[0].startswith("Thread ") and "replan resume --thread-id" in lines[0]
    step_1 = "Step 1 of 2 [ship it in 2 steps]"
    for expected in ("Planning…", "Plan:", f"  1. {step_1}", f"Step 1: {step_1}"):
        assert expected in lines
    assert "Step 2 done: Executed step 2: RESULT 2/2" in lines
    assert (tmp_path / "replan.sqlite").exists()


def test_show_and_threads_describe_stored_runs(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert invoke(capsys, "run", "Ship it in 2 steps", "--thread-id", "one").code == 0
    assert invoke(capsys, "run", "Wait for me", "--thread-id", "two", "--approve-plan").code == 4
    shown = invoke(capsys, "show", "--thread-id", "one")
    assert shown.code == 0
    assert "Status: finished" in shown.out and ANSWER_2 in shown.out
    assert "1. Step 1 of 2 [ship it in 2 steps]\n     Result: Executed step 1" in shown.out
    listed = invoke(capsys, "threads").out.splitlines()
    assert listed == ["two\twaiting for approval\tWait for me", "one\tfinished\tShip it in 2 steps"]


def test_resume_of_a_finished_run_prints_its_answer(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert invoke(capsys, "run", "Ship it in 2 steps", "--thread-id", "t").code == 0
    before = len(server.requests)
    again = invoke(capsys, "resume", "--thread-id", "t")
    assert (again.code, again.out.strip()) == (0, ANSWER_2)
    assert "already finished" in again.err
    assert len(server.requests) == before


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["resume", "--thread-id", "nope"], 5, "no database at replan.sqlite"),
        (["show", "--thread-id", "nope", "--db", "other.db"], 5, "no database at other.db"),
    ],
)
def test_missing_database(
    server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: int,
    message: str,
) -> None:
    outcome = invoke(capsys, *args)
    assert (outcome.code, outcome.err.strip()) == (code, f"replan: {message}")
    assert not Path("replan.sqlite").exists()


def test_unknown_thread_and_reused_thread_id(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert invoke(capsys, "run", "Ship it in 2 steps", "--thread-id", "t").code == 0
    unknown = invoke(capsys, "resume", "--thread-id", "nope")
    assert unknown.code == 5
    assert unknown.err.strip() == "replan: no run with thread id nope in replan.sqlite"
    assert invoke(capsys, "show", "--thread-id", "nope").code == 5
    reused = invoke(capsys, "run", "Other", "--thread-id", "t")
    assert reused.code == 2 and "thread t already exists" in reused.err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["run"])
    assert exited.value.code == 2
    with pytest.raises(SystemExit) as exited:
        cli.main(["resume", "--thread-id", "x", "--approve", "--reject"])
    assert exited.value.code == 2


@pytest.mark.parametrize("objective", ["", "   ", "\n\t"])
def test_an_empty_objective_is_a_usage_error_before_anything_is_stored(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str], objective: str
) -> None:
    refused = invoke(capsys, "run", objective, "--thread-id", "e")
    assert (refused.code, refused.out) == (2, "")
    assert refused.err.strip() == "replan: the objective is empty: say what the run should achieve"
    assert server.requests == [] and not Path("replan.sqlite").exists()


def test_missing_api_key_is_one_line_exit_3(
    server: ScriptedOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    failed = invoke(capsys, "run", "Ship it", "--thread-id", "k")
    assert failed.code == 3
    assert "Traceback" not in failed.err
    assert "replan: OPENAI_API_KEY is not set" in failed.err.splitlines()[-2]
    assert server.requests == []


def test_unreachable_server_then_back(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.stop()
    failed = invoke(capsys, "run", "Ship it in 2 steps", "--thread-id", "u", "--max-retries", "0")
    assert failed.code == 3
    assert failed.err.splitlines()[-2] == "replan: cannot reach the model server: Connection error."
    assert failed.err.splitlines()[-1].endswith("replan resume --thread-id u")
    with ScriptedOpenAIServer(script.respond, port=server.port) as again:
        resumed = invoke(capsys, "resume", "--thread-id", "u")
        assert (resumed.code, resumed.out.strip()) == (0, ANSWER_2)
        assert [script.classify(r).role for r in again.requests][0] == "planner"


# --- plan approval ----------------------------------------------------------------------


def _waiting(capsys: pytest.CaptureFixture[str], thread: str) -> None:
    waiting = invoke(capsys, "run", "Ship it in 2 steps", "--thread-id", thread, "--approve-plan")
    assert waiting.code == 4
    assert f"replan resume --thread-id {thread} --approve" in waiting.err.splitlines()[-1]
    assert waiting.out == ""


def test_approval_without_terminal_then_approve(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _waiting(capsys, "a")
    assert script.executor_steps(server.requests) == []
    assert invoke(capsys, "resume", "--thread-id", "a").code == 4
    approved = invoke(capsys, "resume", "--thread-id", "a", "--approve")
    assert (approved.code, approved.out.strip()) == (0, ANSWER_2)
    assert "Plan approved." in approved.err
    again = invoke(capsys, "resume", "--thread-id", "a", "--approve")
    assert again.code == 0 and "already finished" in again.err


def test_edit_and_reject_the_waiting_plan(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _waiting(capsys, "e")
    edited = invoke(capsys, "resume", "--thread-id", "e", "--edit-plan", "Step 1 of 1 [mine]")
    assert (edited.code, edited.out.strip()) == (0, "All 1 steps of [mine] are done: RESULT 1/1")
    assert "Plan edited:\n  1. Step 1 of 1 [mine]" in edited.err
    _waiting(capsys, "r")
    rejected = invoke(capsys, "resume", "--thread-id", "r", "--reject", "too long")
    assert rejected.code == 0 and "rejected" in rejected.out and "too long" in rejected.out
    assert script.executor_steps(server.requests) == [1]


def test_review_flag_without_a_waiting_plan_is_a_usage_error(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.stop()
    assert invoke(capsys, "run", "Ship it", "--thread-id", "x", "--max-retries", "0").code == 3
    outcome = invoke(capsys, "resume", "--thread-id", "x", "--approve")
    assert outcome.code == 2 and "no plan waiting for approval" in outcome.err


def test_approval_on_a_terminal_asks(
    server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = iter(["maybe", "e", "Step 1 of 1 [typed]", "", ""])
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda: next(answers))
    done = invoke(capsys, "run", "Ship it in 2 steps", "--approve-plan")
    assert (done.code, done.out.strip()) == (0, "All 1 steps of [typed] are done: RESULT 1/1")
    assert "The plan waits for your approval:\n1. Step 1 of 2" in done.err
    assert next(answers) == ""


def test_documented_exit_codes_match_the_code() -> None:
    section = README.read_text(encoding="utf-8").split("## Command line\n")[1].split("\n## ")[0]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", section, re.M)}
    assert documented == {int(code) for code in cli.ExitCode}
    assert {int(code) for code in re.findall(r"^ {4}(\d+) ", cli.__doc__ or "", re.M)} == documented


def test_task_list_round_trips_through_the_checkpoint_without_warnings(
    server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    def with_task(request: dict[str, Any]) -> Reply:
        first_turn = request["messages"][-1]["role"] != "tool"
        if script.classify(request).role == "executor" and first_turn:
            return tool_call("TaskCreate", {"subject": "Write it", "description": "the report"})
        return script.respond(request)

    server.responder = with_task
    assert invoke(capsys, "run", "Ship it in 2 steps", "--thread-id", "t").code == 0
    shown = invoke(capsys, "show", "--thread-id", "t").out
    assert "Tasks:\n  #1 [pending] Write it\n  #2 [pending] Write it" in shown
    assert [r.getMessage() for r in caplog.records if "msgpack" in r.getMessage()] == []
