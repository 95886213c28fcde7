"""`replan run` with default settings against each local server's quirks: a first run gets
through to an answer or a truthful "not finished", never a failure; a fallback for the
model's mistakes is shown while the run goes on and kept with the run."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from replan.cli.output import ExitCode
from replan.testing import LLAMA_CPP, LLAMA_CPP_PYTHON, OLLAMA, ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, invoke

PRESETS = {
    "llama-server, small model": dataclasses.replace(
        LLAMA_CPP, run_on=True, prose_when_forced=True
    ),
    "llama-server, run on": dataclasses.replace(LLAMA_CPP, run_on=True),
    "llama-cpp-python": LLAMA_CPP_PYTHON,
    "ollama, small model": dataclasses.replace(OLLAMA, prose_when_forced=True),
}
FALLBACK_LINE = (
    "the model's replies to a named tool_choice ('plan') carried no decision; asking for "
    "decisions as json_schema from now on"
)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(script.respond) as scripted:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", scripted.base_url)
        yield scripted


@pytest.mark.parametrize("preset", list(PRESETS))
def test_a_first_run_with_defaults_ends_in_an_answer_on_every_local_server(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str], preset: str
) -> None:
    server.quirks = PRESETS[preset]
    done = invoke(capsys, "run", *PLANNED, "Ship it in 2 steps", "--thread-id", "t")

    assert done.code == ExitCode.OK, done.err
    assert (
        done.out.strip() == "All 2 steps of [ship it in 2 steps] are done: RESULT 1/2, RESULT 2/2"
    )


def test_a_run_whose_steps_never_get_done_ends_not_finished_not_failed(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.quirks = PRESETS["llama-server, small model"]
    server.responder = lambda request: (
        script.text("I cannot do that.")
        if script.classify(request).role == "executor"
        else script.respond(request)
    )
    done = invoke(capsys, "run", *PLANNED, "Ship it in 2 steps", "--max-iterations", "3")

    assert done.code == ExitCode.NOT_FINISHED, done.err
    assert done.out.startswith("The objective was not finished")


def test_the_fallback_for_mistakes_is_shown_and_kept_with_the_run(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.quirks = PRESETS["llama-server, small model"]
    done = invoke(
        capsys,
        "run",
        *PLANNED,
        "Ship it in 2 steps",
        "--thread-id",
        "t",
        "--answer",
        "plain",
    )
    assert done.code == ExitCode.OK, done.err
    assert FALLBACK_LINE in done.err.splitlines()
    assert "writing the answer" in done.err

    shown = invoke(capsys, "show", "--thread-id", "t", "--json")
    document = json.loads(shown.out)
    assert document["settings"]["decision_mode"] == "json_schema"
    assert document["settings"]["answer"] == "plain"
    (fallback,) = document["decision_mode"]["fallbacks"]
    assert (fallback["reason"], fallback["status"]) == ("mistakes", None)
    assert document["usage"]["nodes"]["answer"]["calls"] == 1
    report = invoke(capsys, "show", "--thread-id", "t").out
    assert f"Decisions asked as json_schema:\n  {FALLBACK_LINE}" in report


def test_answers_in_the_decision_are_a_run_setting(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    done = invoke(
        capsys,
        "run",
        *PLANNED,
        "Ship it in 2 steps",
        "--thread-id",
        "t",
        "--answer",
        "decision",
    )
    assert done.code == ExitCode.OK, done.err
    assert all(script.classify(r).role != "answer" for r in server.requests)
    shown = json.loads(invoke(capsys, "show", "--thread-id", "t", "--json").out)
    assert shown["settings"]["answer"] == "decision"
    with pytest.raises(SystemExit) as refused:
        invoke(capsys, "run", *PLANNED, "Ship it", "--answer", "json")
    assert refused.value.code == ExitCode.USAGE


def test_a_forced_call_sent_back_as_text_moves_the_decisions_to_json(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """llama-server: the planner's forced call comes back as text; the replanner is asked for
    JSON at once instead of a forced call it would answer in prose."""
    server.quirks = LLAMA_CPP
    done = invoke(capsys, "run", *PLANNED, "Ship it in 2 steps", "--thread-id", "t")

    assert done.code == ExitCode.OK, done.err
    assert (
        "the model server sent back as text a call it was forced to make (a named tool_choice "
        "('plan')); asking for decisions as json_schema from now on"
    ) in done.err.splitlines()
    replanner = [r for r in server.requests if script.classify(r).role == "replanner"]
    assert replanner and all("tools" not in r for r in replanner)
    shown = json.loads(invoke(capsys, "show", "--thread-id", "t", "--json").out)
    assert shown["settings"]["decision_mode"] == "json_schema"


def test_a_server_known_not_to_enforce_a_forced_call_is_asked_for_json_from_the_start(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server whose models list names `llamacpp`: the run says so once and asks every
    decision, the planner's first included, as JSON."""
    server.quirks, server.owned_by = LLAMA_CPP, "llamacpp"
    done = invoke(capsys, "run", *PLANNED, "Ship it in 2 steps", "--thread-id", "t")

    assert done.code == ExitCode.OK, done.err
    assert (
        "the model server is known not to enforce tool_required (its models' owner: "
        "llamacpp); asking for decisions as json_schema from now on"
    ) in done.err.splitlines()
    decisions = [r for r in server.requests if script.classify(r).role in ("planner", "replanner")]
    assert decisions and all("tools" not in r for r in decisions)


def test_a_replanner_that_never_decides_ends_not_finished_with_the_work_kept(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.responder = lambda request: (
        script.text("I would rather chat.")
        if script.classify(request).role == "replanner"
        else script.respond(request)
    )
    done = invoke(capsys, "run", *PLANNED, "Ship it in 2 steps", "--thread-id", "t")

    assert done.code == ExitCode.NOT_FINISHED, done.err
    assert "Traceback" not in done.err
    assert done.out.startswith("The objective was not finished: the model gave no usable")
    assert "RESULT 1/2" in done.out  # the answer written from the work done
    shown = json.loads(invoke(capsys, "show", "--thread-id", "t", "--json").out)
    assert shown["stop_reason"] == "no_decision"
