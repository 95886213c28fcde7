"""Bounded replies and runs that make no progress, through the real ChatOpenAI client against the
scripted server: every request carries a token limit, a reply cut off there is handled, a timeout
says so, and a step planned again after two runs ends the run."""

from __future__ import annotations

import itertools
import re
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI

from replan.graphs.context import (
    DEFAULT_DECISION_MAX_TOKENS,
    DEFAULT_EXECUTOR_MAX_TOKENS,
    MAX_REPLY_TOKENS,
    Context,
)
from replan.graphs.errors import ModelUnavailableError
from replan.graphs.graph_state import ExecutedStep, PlannedStep
from replan.graphs.model.client import chat_model_from_context
from replan.graphs.model.turn import cut_off
from replan.graphs.plan.progress import repeated_step, step_key
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.testing import (
    RUN_ON_CONTEXT_TOKENS,
    Quirks,
    Reply,
    ScriptedOpenAIServer,
    ToolCallSpec,
    text,
    tool_call,
)
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, invoke
from tests.support.fake_models import ANSWER_CALLS, Mode, both_modes, run, stream

OBJECTIVE = "Ship it in 2 steps"
ANSWER = "All 2 steps of [ship it in 2 steps] are done: RESULT 1/2, RESULT 2/2"


def _context(server: ScriptedOpenAIServer, **overrides: Any) -> Context:
    return Context(model="scripted-model", base_url=server.base_url, **overrides)


def _limits(requests: list[dict[str, Any]]) -> dict[str, set[int | None]]:
    """The `max_tokens` each node's requests carried."""
    limits: dict[str, set[int | None]] = {}
    for request in requests:
        limits.setdefault(script.classify(request).role, set()).add(request.get("max_tokens"))
    return limits


# --- every request carries a limit ------------------------------------------------------


@both_modes
def test_every_request_carries_its_nodes_default_limit(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    result = run(
        build_plan_execute_graph(task_tools="compact"), OBJECTIVE, mode, context=_context(server)
    )

    assert result["response"] == ANSWER
    answer = {"answer": {DEFAULT_DECISION_MAX_TOKENS}} if ANSWER_CALLS else {}
    assert _limits(server.requests) == {
        "planner": {DEFAULT_DECISION_MAX_TOKENS},
        "executor": {DEFAULT_EXECUTOR_MAX_TOKENS},
        "replanner": {DEFAULT_DECISION_MAX_TOKENS},
        **answer,  # the answer is bounded as a decision is
    }
    assert not any("max_completion_tokens" in r for r in server.requests)


def test_a_run_sets_its_own_limits(server: ScriptedOpenAIServer) -> None:
    context = _context(server, decision_max_tokens=300, executor_max_tokens=700)
    run(build_plan_execute_graph(task_tools="compact"), OBJECTIVE, "sync", context=context)

    assert _limits(server.requests) == {
        "planner": {300},
        "executor": {700},
        "replanner": {300},
        **({"answer": {300}} if ANSWER_CALLS else {}),
    }


def test_openai_itself_gets_the_limit_as_max_completion_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    for base_url in (None, "https://api.openai.com/v1"):
        model = chat_model_from_context(Context(base_url=base_url), 77)
        assert isinstance(model, ChatOpenAI)
        payload = model._get_request_payload("hi")  # what the OpenAI client is given
        assert payload["max_completion_tokens"] == 77 and "max_tokens" not in payload


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("decision_max_tokens", 0),
        ("executor_max_tokens", -5),
        ("executor_max_tokens", MAX_REPLY_TOKENS + 1),
        ("decision_max_tokens", 10.5),
        ("decision_max_tokens", None),
    ],
)
def test_limits_that_no_run_could_use_are_refused(name: str, value: Any) -> None:
    with pytest.raises(ValueError, match=name):
        Context(**{name: value})


def test_the_cli_passes_its_limits_and_refuses_bad_ones(
    server: ScriptedOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    with pytest.raises(SystemExit) as bad:
        invoke(capsys, "run", *PLANNED, OBJECTIVE, "--decision-max-tokens", "0")
    assert bad.value.code == 2
    assert "--decision-max-tokens: must be from 1 to" in capsys.readouterr().err
    limits = ("--decision-max-tokens", "111", "--executor-max-tokens", "222")
    done = invoke(capsys, "run", *PLANNED, OBJECTIVE, "--thread-id", "t", *limits)
    assert (done.code, done.out.strip()) == (0, ANSWER)
    answer = {"answer": {111}} if ANSWER_CALLS else {}
    assert _limits(server.requests) == {
        "planner": {111},
        "executor": {222},
        "replanner": {111},
        **answer,
    }
    shown = invoke(capsys, "show", "--thread-id", "t").out
    assert "  decision_max_tokens: 111\n" in shown and "  executor_max_tokens: 222\n" in shown


# --- replies cut off at the limit --------------------------------------------------------


def _running_on_at(server: ScriptedOpenAIServer, *requests: int) -> None:
    """Let the scripted model's replies to the requests numbered `requests` (1-based, in the
    order they arrive) run on to their token limit (`Quirks.run_on`)."""
    count = itertools.count(1)

    def responder(request: dict[str, Any]) -> Reply:
        # the quirks of this request are already chosen: set those of the next one
        server.quirks = Quirks(run_on=next(count) + 1 in requests)
        return script.respond(request)

    server.quirks = Quirks(run_on=1 in requests)
    server.responder = responder


CUT_OFF_PLAN = Reply(
    calls=(ToolCallSpec("plan", '{"steps": ["Step 1 of 2 [compare'),), finish_reason="length"
)
"""A `plan` call whose arguments the token limit cut off mid-way."""


def _stream_or_run(server: ScriptedOpenAIServer, streamed: bool, **context: Any) -> Any:
    graph, run_context = build_plan_execute_graph(task_tools="compact"), _context(server, **context)
    if not streamed:
        return run(graph, OBJECTIVE, "sync", context=run_context)
    # token streaming makes the model calls streamed requests
    items = stream(
        graph, OBJECTIVE, "sync", stream_mode=["messages", "values"], context=run_context
    )
    return [chunk for kind, chunk in items if kind == "values"][-1]


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
def test_a_json_decision_that_runs_on_to_the_limit_is_taken(
    server: ScriptedOpenAIServer, streamed: bool
) -> None:
    _running_on_at(server, 1)  # the planner's first reply: a whole plan, then newlines
    result = _stream_or_run(server, streamed, decision_max_tokens=50, decision_mode="json_schema")

    assert result["response"].endswith("are done: RESULT 1/2, RESULT 2/2")
    first, second, *_ = server.requests
    assert bool(first.get("stream")) is streamed
    assert [script.classify(r).role for r in (first, second)] == ["planner", "executor"]


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
def test_a_tool_call_that_runs_on_to_the_limit_is_asked_again(
    server: ScriptedOpenAIServer, streamed: bool
) -> None:
    _running_on_at(server, 1)  # the planner's first reply: a good call, then newlines
    result = _stream_or_run(server, streamed, decision_max_tokens=50)

    assert result["response"].endswith("are done: RESULT 1/2, RESULT 2/2")
    first, second, *_ = server.requests
    assert [script.classify(r).role for r in (first, second)] == ["planner", "planner"]
    assert "cut off at the limit of 50 tokens" in second["messages"][-1]["content"]


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
def test_a_decision_cut_off_inside_is_corrected_and_asked_again(
    server: ScriptedOpenAIServer, streamed: bool
) -> None:
    def responder(request: dict[str, Any]) -> Reply:  # the script plans for the objective
        corrected = "cut off" in str(request["messages"][-1]["content"])
        return script.respond(
            {**request, "messages": request["messages"][: -1 if corrected else None]}
        )

    server.push(CUT_OFF_PLAN)
    server.responder = responder
    result = _stream_or_run(server, streamed, decision_max_tokens=50)

    assert result["response"].endswith("are done: RESULT 1/2, RESULT 2/2")
    first, second, *_ = server.requests
    assert [script.classify(r).role for r in (first, second)] == ["planner", "planner"]
    correction = second["messages"][-1]["content"]
    assert "cut off at the limit of 50 tokens" in correction and "brief" in correction
    assert script.classify(server.requests[2]).role == "executor"


def test_a_decision_cut_off_every_time_falls_back_through_the_modes_then_ends_the_turn(
    server: ScriptedOpenAIServer,
) -> None:
    server.responder = lambda request: CUT_OFF_PLAN
    server.quirks = Quirks(run_on=True)  # in a JSON mode too: the cut-off call as run-on text
    graph = build_plan_execute_graph(mistake_retries=1, task_tools="compact")
    result = run(graph, OBJECTIVE, "sync", context=_context(server))
    assert result["stop_reason"] == "no_decision"
    assert re.search("cut off at the limit of 1024 tokens.*after 2", result["response"])
    asked = [r.get("tool_choice") or r["response_format"]["type"] for r in server.requests]
    plan = {"type": "function", "function": {"name": "plan"}}
    # a cut-off call (here also in the JSON modes) is corrected in its mode before falling back
    assert asked == [plan, plan, "json_schema", "json_schema", "json_object", "json_object"]


@both_modes
def test_an_executor_reply_cut_off_ends_its_step_unfinished(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    _running_on_at(server, 2)  # planner, then the executor's report on step 1 runs on
    context = _context(server, executor_max_tokens=40)
    result = run(build_plan_execute_graph(task_tools="compact"), OBJECTIVE, mode, context=context)

    first = result["executed_steps"][0]
    assert first["status"] == "unfinished"
    assert first["result"].startswith("UNFINISHED: the executor's reply was cut off at the limit")
    assert "40 tokens" in first["result"]
    assert "Executed step 1: RESULT 1/2" in first["result"]  # what it had written
    assert first["result"].count("\n") < 10  # not the newlines it ran on with
    executor_calls = [r for r in server.requests if script.classify(r).role == "executor"]
    assert script.classify(server.requests[2]).role == "replanner"  # no second executor turn
    assert len(executor_calls) == 2


def test_run_on_without_a_limit_runs_to_the_end_of_the_context() -> None:
    ran_on = Quirks(run_on=True).answer({"model": "m"}, text("done"))
    assert ran_on.finish_reason == "length"
    assert ran_on.content is not None and ran_on.content.startswith("done\n")
    assert ran_on.content.count("\n") == RUN_ON_CONTEXT_TOKENS - 1
    limited = Quirks(run_on=True).answer({"max_tokens": 30}, tool_call("plan", {"steps": ["a"]}))
    assert limited.finish_reason == "length" and limited.calls


def test_cut_off_reads_the_finish_reason() -> None:
    assert cut_off(AIMessage("x", response_metadata={"finish_reason": "length"}))
    assert not cut_off(AIMessage("x", response_metadata={"finish_reason": "stop"}))
    assert not cut_off(AIMessage("x"))


# --- timeouts -----------------------------------------------------------------------------


def test_a_request_that_times_out_says_so(server: ScriptedOpenAIServer) -> None:
    def slow(request: dict[str, Any]) -> Reply:
        time.sleep(1.0)
        return script.respond(request)

    server.responder = slow
    context = _context(server, timeout=0.2, max_retries=0)
    with pytest.raises(ModelUnavailableError) as failed:
        run(build_plan_execute_graph(task_tools="compact"), OBJECTIVE, "sync", context=context)
    assert str(failed.value) == f"planner: no reply within 0.2 s from {server.base_url}"


# --- no progress --------------------------------------------------------------------------

STEP = "Create a new version of the library"


def test_steps_are_the_same_whatever_their_case_and_spacing() -> None:
    assert step_key("  Create a NEW\tversion\n of it ") == step_key("create a new version of it")
    assert step_key("Create a new version") != step_key("Create a new versions")
    done: list[ExecutedStep] = [{"step": "Build it", "result": "ok"}]
    wave: list[PlannedStep] = [{"id": 5, "step": "build  IT", "depends_on": []}]
    assert repeated_step(wave, done) is None  # carried out once: once more is allowed
    done.append({"step": "BUILD it", "result": "ok again"})
    assert repeated_step(wave, done) == ("build  IT", 2)
    assert repeated_step([{"id": 6, "step": "Test it", "depends_on": []}], done) is None


def test_a_call_failing_for_another_reason_than_before_made_progress() -> None:
    """A call that failed, then failed with another error (what the first asked for was done),
    may be made once more; failing the same way twice, it may not."""
    call: ExecutedStep = {"step": "start()", "tool": "start", "status": "failed", "result": ""}
    wave: list[PlannedStep] = [{"id": 9, "step": "start()", "tool": "start", "depends_on": []}]
    done = [{**call, "result": '{"error": "lock the doors first"}'}]
    done.append({**call, "result": '{"error": "press the pedal first"}'})
    assert repeated_step(wave, done) is None
    done.append({**call, "result": '{"error": "press the pedal first"}'})
    assert repeated_step(wave, done) == ("start()", 2)
    done.append({**call, "status": "done", "result": "started"})
    assert repeated_step(wave, done) == ("start()", 4)


def _repeater(request: dict[str, Any]) -> Reply:
    """A model that plans the same step again after every run, written a little differently."""
    role = script.classify(request).role
    if role == "planner":
        return tool_call("plan", {"steps": [STEP]})
    if role == "replanner":
        return tool_call("plan", {"steps": ["create a new   version of the Library", "Publish it"]})
    return text("Version 2.0 created.")


def _replanner_prompts(server: ScriptedOpenAIServer) -> list[str]:
    return [
        script.prompt_text(r) for r in server.requests if script.classify(r).role == "replanner"
    ]


@both_modes
def test_a_step_planned_again_after_two_runs_ends_the_run(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    server.responder = _repeater
    result = run(
        build_plan_execute_graph(task_tools="compact"),
        "Release the library",
        mode,
        context=_context(server),
    )

    assert [s["step"] for s in result["executed_steps"]] == [
        STEP,
        "create a new   version of the Library",
    ]
    assert result["stop_reason"] == "no_progress"
    report = result["response"]
    assert report.startswith("The objective was not finished: the run stopped making progress")
    assert "create a new   version of the Library" in report and "carried out 2 times" in report
    why, answer = report.split("\n\n")  # why it stopped, then an answer from the results
    assert answer == "Version 2.0 created." and "Publish it" not in report
    (answering,) = [r for r in server.requests if script.classify(r).role == "answer"]
    asked = script.prompt_text(answering)
    assert "could not be done" in asked and "Result: Version 2.0 created." in asked
    first, second = _replanner_prompts(server)
    assert "more than once" not in first
    assert "# Steps carried out more than once" in second
    assert f"- {STEP} (carried out 2 times)" not in second  # the last run's text is shown
    assert "- create a new   version of the Library (carried out 2 times)" in second
    assert "Last result: Version 2.0 created." in second


def test_different_steps_go_on(server: ScriptedOpenAIServer) -> None:
    result = run(
        build_plan_execute_graph(task_tools="compact"),
        "Ship it in 3 steps",
        "sync",
        context=_context(server),
    )
    assert result["stop_reason"] == "" and len(result["executed_steps"]) == 3
    assert all("more than once" not in prompt for prompt in _replanner_prompts(server))


def test_the_cli_ends_a_run_without_progress_as_not_finished(
    server: ScriptedOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.responder = _repeater
    stuck = invoke(capsys, "run", *PLANNED, "Release the library", "--thread-id", "s")

    assert stuck.code == 6, stuck.err
    assert stuck.out.startswith("The objective was not finished: the run stopped making progress")
    assert "Objective not finished (no_progress)" in stuck.err.splitlines()[-1]
    shown = invoke(capsys, "show", "--thread-id", "s").out
    assert "Status: not finished (no_progress)" in shown and "Report:\n  The objective" in shown
    assert "not finished (no_progress)" in invoke(capsys, "threads").out.splitlines()[1]
    listed = invoke(capsys, "show", "--thread-id", "s", "--json").out
    assert '"stop_reason": "no_progress"' in listed
