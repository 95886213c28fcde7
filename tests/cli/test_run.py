"""`replan run/resume/show/threads`: progress, answers, statuses, plan approval, settings that
a run keeps, and the exit codes (code, help and docs/cli.md from one source)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from replan.cli import output as cli
from replan.testing import Reply, ScriptedOpenAIServer, tool_call
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, Outcome, cli_env, finish, invoke, run_cli, start_cli
from tests.support.readme import doc, section_text

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
    done = run_cli(server, tmp_path, "run", *PLANNED, "Ship it in 2 steps")
    assert done.code == 0, done.err
    assert done.out.strip() == ANSWER_2
    lines = done.err.splitlines()
    assert lines[0].startswith("Thread ") and "replan resume --thread-id" in lines[0]
    step_1 = "Step 1 of 2 [ship it in 2 steps]"
    for expected in ("Planning…", "Plan:", f"  1. {step_1}", f"Step 1: {step_1}"):
        assert expected in lines
    done_2 = r"Step 2 done in \d+\.\d s: Executed step 2: RESULT 2/2"
    assert any(re.fullmatch(done_2, line) for line in lines)
    assert re.fullmatch(r"Objective done in \d+\.\d s; final answer below\.", lines[-1])
    assert (tmp_path / "replan.sqlite").exists()


def test_show_and_threads_describe_stored_runs(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert invoke(capsys, "run", *PLANNED, "Ship it in 2 steps", "--thread-id", "one").code == 0
    assert (
        invoke(
            capsys,
            "run",
            *PLANNED,
            "Wait for me",
            "--thread-id",
            "two",
            "--approve-plan",
        ).code
        == 4
    )
    shown = invoke(capsys, "show", "--thread-id", "one")
    assert shown.code == 0
    assert "Status: finished\nStarted: " in shown.out and f"Answer:\n  {ANSWER_2}" in shown.out
    assert "Settings:\n  model: gpt-4o-mini\n" in shown.out
    assert f"  base_url: {server.base_url}\n" in shown.out
    settings = shown.out.split("Settings:\n")[1].split("\nObjective:")[0]
    for effective in ("max_iterations: 10", "executor_max_steps: 20", "mistake_retries: 2"):
        assert f"  {effective}\n" in settings  # the graph's defaults, which the run used
    assert "None" not in settings and "  price_in: (not set)\n" in settings
    assert "Tasks:\n  (none)\n" in shown.out and "TaskCreate" not in shown.out
    assert (
        json.loads(invoke(capsys, "show", "--thread-id", "one", "--json").out)["settings"][
            "max_iterations"
        ]
        == 10
    )
    assert "1. Step 1 of 2 [ship it in 2 steps]\n     Result: Executed step 1" in shown.out
    header, *rows = invoke(capsys, "threads").out.splitlines()
    assert header.split() == ["THREAD", "STATUS", "UPDATED", "OBJECTIVE"]
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
    assert re.fullmatch(rf"two +waiting for approval +{stamp}  Wait for me", rows[0])
    assert re.fullmatch(rf"one +finished +{stamp}  Ship it in 2 steps", rows[1])
    assert len(rows) == 2


def test_resume_of_a_finished_run_prints_its_answer(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert invoke(capsys, "run", *PLANNED, "Ship it in 2 steps", "--thread-id", "t").code == 0
    before = len(server.requests)
    again = invoke(capsys, "resume", "--thread-id", "t")
    assert (again.code, again.out.strip()) == (0, ANSWER_2)
    assert again.err == "Thread t has already ended (finished):\n"
    assert len(server.requests) == before


@pytest.mark.slow
def test_a_run_out_of_rounds_is_not_finished_everywhere(
    server: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`max_iterations` ran out: exit 6, the report on stdout, "not finished" in every view."""
    cut = run_cli(
        server,
        tmp_path,
        "run",
        *PLANNED,
        "Cut short in 3 steps",
        "--thread-id",
        "c",
        "--max-iterations",
        "1",
    )
    assert cut.code == 6, cut.err
    assert cut.out.startswith("The objective was not finished") and "RESULT 1/3" in cut.out
    assert "Objective not finished (max_iterations)" in cut.err.splitlines()[-1]
    assert "Objective done" not in cut.err
    shown = invoke(capsys, "show", "--thread-id", "c").out
    assert "Status: not finished (max_iterations)" in shown and "Report:\n  The objective" in shown
    assert "  max_iterations: 1\n  executor_max_steps: 20\n" in shown  # given, and the default
    assert "not finished (max_iterations)" in invoke(capsys, "threads").out.splitlines()[1]
    again = invoke(capsys, "resume", "--thread-id", "c")
    assert again.code == 6 and again.out == cut.out
    assert again.err == "Thread c has already ended (not finished (max_iterations)):\n"


@pytest.mark.slow
def test_resume_continues_on_the_runs_own_model_and_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The printed resume command, run where the environment names another server and no key
    is stored, continues with the model, URL and bounds the run started with."""
    with (
        ScriptedOpenAIServer(script.respond) as chosen,
        ScriptedOpenAIServer(script.respond) as default,
    ):
        env = {**cli_env(default), "OPENAI_API_KEY": "sk-never-stored"}
        waiting = finish(
            start_cli(
                default,
                tmp_path,
                "run",
                *PLANNED,
                "Ship it in 2 steps",
                "--thread-id",
                "m",
                "--base-url",
                chosen.base_url,
                "--model",
                "model-a",
                "--temperature",
                "0.5",
                "--approve-plan",
                env=env,
            )
        )
        assert waiting.code == 4, waiting.err
        hint = waiting.err.splitlines()[-1].split("Answer with: ")[1].split(" --approve |")[0]
        assert hint == "replan resume --thread-id m"
        resumed = finish(start_cli(default, tmp_path, *hint.split()[1:], "--approve", env=env))
        assert (resumed.code, resumed.out.strip()) == (0, ANSWER_2), resumed.err
        assert default.requests == []
        assert {r["model"] for r in chosen.requests} == {"model-a"}
        assert {r["temperature"] for r in chosen.requests} == {0.5}
        assert script.executor_steps(chosen.requests) == [1, 2]
    shown = run_cli(None, tmp_path, "show", "--thread-id", "m").out
    assert f"base_url: {chosen.base_url}\n" in shown and "model: model-a\n" in shown
    stored = [path.read_bytes() for path in tmp_path.glob("replan.sqlite*")]
    assert stored and not any(b"sk-never-stored" in data for data in stored)


def test_options_given_to_resume_override_the_stored_ones(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        invoke(
            capsys,
            "run",
            *PLANNED,
            "Ship it in 2 steps",
            "--thread-id",
            "o",
            "--approve-plan",
        ).code
        == 4
    )
    assert invoke(capsys, "resume", "--thread-id", "o", "--approve", "--model", "model-b").code == 0
    models = [r["model"] for r in server.requests]
    assert models[0] == "gpt-4o-mini" and set(models[1:]) == {"model-b"}
    assert "model: model-b\n" in invoke(capsys, "show", "--thread-id", "o").out


@pytest.mark.parametrize("objective", ["", "   ", "\n\t"])
def test_an_empty_objective_is_a_usage_error_before_anything_is_stored(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str], objective: str
) -> None:
    refused = invoke(capsys, "run", *PLANNED, objective, "--thread-id", "e")
    assert (refused.code, refused.out) == (2, "")
    assert refused.err.strip() == "replan: the objective is empty: say what the run should achieve"
    assert server.requests == [] and not Path("replan.sqlite").exists()


def test_unreachable_server_then_back(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.stop()
    failed = invoke(
        capsys,
        "run",
        *PLANNED,
        "Ship it in 2 steps",
        "--thread-id",
        "u",
        "--max-retries",
        "0",
    )
    assert failed.code == 3
    assert failed.err.splitlines()[-2].startswith(
        f"replan: cannot reach the model server at {server.base_url}: "
    )
    assert failed.err.splitlines()[-1].endswith("replan resume --thread-id u")
    with ScriptedOpenAIServer(script.respond, port=server.port) as again:
        resumed = invoke(capsys, "resume", "--thread-id", "u")
        assert (resumed.code, resumed.out.strip()) == (0, ANSWER_2)
        assert [script.classify(r).role for r in again.requests][0] == "planner"


# --- plan approval ----------------------------------------------------------------------


def _waiting(capsys: pytest.CaptureFixture[str], thread: str) -> None:
    waiting = invoke(
        capsys,
        "run",
        *PLANNED,
        "Ship it in 2 steps",
        "--thread-id",
        thread,
        "--approve-plan",
    )
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
    assert again.code == 2
    assert again.err == "replan: thread a has no plan waiting for approval (it has ended)\n"


def test_edit_and_reject_the_waiting_plan(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _waiting(capsys, "e")
    mine = ["Step 1 of 2 [mine]", "Step 2 of 2 [mine]"]
    edited = invoke(capsys, "resume", "--thread-id", "e", "--edit-plan", *mine)
    assert (edited.code, edited.out.strip()) == (
        0,
        "All 2 steps of [mine] are done: RESULT 1/2, RESULT 2/2",
    )
    lines = edited.err.splitlines()
    edited_at = lines.index("Plan edited:")
    assert lines[edited_at + 1 : edited_at + 3] == [f"  1. {mine[0]}", f"  2. {mine[1]}"]
    assert f"Step 1: {mine[0]}" in lines and f"Step 2: {mine[1]}" in lines  # as printed
    assert any(line.startswith("Step 2 done in ") for line in lines)
    shown = invoke(capsys, "show", "--thread-id", "e").out
    assert f"Executed steps:\n  1. {mine[0]}\n" in shown and f"  2. {mine[1]}\n" in shown
    assert f"step 2 ({mine[1]})" in shown
    _waiting(capsys, "r")
    rejected = invoke(capsys, "resume", "--thread-id", "r", "--reject", "too long")
    assert rejected.code == cli.ExitCode.REJECTED == 8
    assert "rejected" in rejected.out and "too long" in rejected.out
    assert script.executor_steps(server.requests) == [1, 2]  # the edited plan's only


def test_a_rejected_plan_is_shown_as_rejected_not_as_steps_to_do(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _waiting(capsys, "r")
    assert invoke(capsys, "resume", "--thread-id", "r", "--reject", "too long").code == 8
    shown = invoke(capsys, "show", "--thread-id", "r").out
    assert "Status: rejected\n" in shown
    assert "Plan (rejected at review, not carried out):\n  1. Step 1 of 2" in shown
    assert "still to do" not in shown and "Report:\n  The plan was rejected" in shown
    document = json.loads(invoke(capsys, "show", "--thread-id", "r", "--json").out)
    assert (document["status"], document["stop_reason"], document["plan"]) == (
        "rejected",
        "rejected",
        [],
    )
    listed = invoke(capsys, "threads").out.splitlines()
    assert re.match(r"r +rejected +", listed[1])
    again = invoke(capsys, "resume", "--thread-id", "r")
    assert (again.code, again.err) == (8, "Thread r has already ended (rejected):\n")
    assert "too long" in again.out


def test_threads_without_a_database_lists_no_runs(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hint = (
        'No runs yet: there is no database at replan.sqlite (replan run "OBJECTIVE" creates it).\n'
    )
    assert invoke(capsys, "threads") == Outcome(0, "", hint)
    assert invoke(capsys, "threads", "--json") == Outcome(0, "[]\n", hint)
    assert not (tmp_path / "replan.sqlite").exists()
    assert invoke(capsys, "show", "--thread-id", "x").code == cli.ExitCode.NO_SUCH_RUN


def test_a_run_refused_before_it_could_start_stores_nothing(
    server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    _waiting(capsys, "w")
    monkeypatch.delenv("OPENAI_API_KEY")
    refused = invoke(capsys, "run", *PLANNED, "Ship it in 2 steps", "--thread-id", "k")
    assert (refused.code, refused.out) == (cli.ExitCode.MODEL_UNAVAILABLE, "")
    assert re.fullmatch(r"replan: OPENAI_API_KEY is not set: [^\n]*\n", refused.err)
    listed = json.loads(invoke(capsys, "threads", "--json").out)
    assert [run["thread_id"] for run in listed] == ["w"]
    kept = invoke(capsys, "resume", "--thread-id", "w", "--approve")
    assert (kept.code, kept.out) == (cli.ExitCode.MODEL_UNAVAILABLE, "")
    assert kept.err.startswith("replan: OPENAI_API_KEY is not set")
    assert json.loads(invoke(capsys, "show", "--thread-id", "w", "--json").out)["status"] == (
        "waiting_for_approval"
    )
    monkeypatch.delenv("REPLAN_DB", raising=False)
    (tmp_path / "fresh").mkdir()
    monkeypatch.chdir(tmp_path / "fresh")
    assert invoke(capsys, "run", *PLANNED, "Ship it", "--thread-id", "k").code == 3
    assert list((tmp_path / "fresh").iterdir()) == []
    assert script.executor_steps(server.requests) == []


def test_review_flag_without_a_waiting_plan_is_a_usage_error(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.stop()
    assert (
        invoke(
            capsys,
            "run",
            *PLANNED,
            "Ship it",
            "--thread-id",
            "x",
            "--max-retries",
            "0",
        ).code
        == 3
    )
    outcome = invoke(capsys, "resume", "--thread-id", "x", "--approve")
    assert outcome.code == 2
    assert outcome.err == "replan: thread x has no plan waiting for approval\n"


def test_approval_on_a_terminal_asks(
    server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = iter(["maybe", "e", "Step 1 of 1 [typed]", "", ""])
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda: next(answers))
    done = invoke(capsys, "run", *PLANNED, "Ship it in 2 steps", "--approve-plan")
    assert (done.code, done.out.strip()) == (0, "All 1 steps of [typed] are done: RESULT 1/1")
    assert "The plan waits for your approval:\n1. Step 1 of 2" in done.err
    assert next(answers) == ""


# --- exit codes ---------------------------------------------------------------------------


@pytest.mark.slow
def test_exit_codes_in_the_docs_and_the_help_are_the_code_s(tmp_path: Path) -> None:
    section = section_text("Exit codes and errors", doc("cli.md"))
    documented = dict(re.findall(r"^\| (\d+) \| (.+?) \|$", section, re.M))
    assert {int(code): meaning for code, meaning in documented.items()} == {
        code.value: code.meaning for code in cli.ExitCode
    }
    shown = run_cli(None, tmp_path, "--help")
    assert shown.code == 0
    for code in cli.ExitCode:
        assert re.search(rf"^  {code.value} +{re.escape(code.meaning)}$", shown.out, re.M)


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
    assert invoke(capsys, "run", *PLANNED, "Ship it in 2 steps", "--thread-id", "t").code == 0
    shown = invoke(capsys, "show", "--thread-id", "t").out
    assert "Tasks:\n  #1 [pending] Write it\n  #2 [pending] Write it" in shown
    assert [r.getMessage() for r in caplog.records if "msgpack" in r.getMessage()] == []
