"""Answering a plan review from the command line: an edit that is not taken says why (with
`resume --edit-plan` and at the terminal prompt), and one step of the plan can be given a new
text or dropped, keeping the others (`review_plan` changes it and asks again)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from replan.graphs.context import Context
from replan.graphs.nodes.review import REVIEW_ANSWERS, edit_problems
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, REPLAN, Outcome, cli_env, invoke
from tests.support.fake_models import FakeChatModel, call, respond, run, text
from tests.support.terminal import Terminal

CONFIG: RunnableConfig = {"configurable": {"thread_id": "review"}}
WHEN_NEEDED = Context(replan="when_needed")
"""The replanner is asked once the plan is done (the fake model only answers `respond`)."""
APPROVE = Context(approve_plan=True, replan="when_needed")
QUESTION = "Approve this plan? [a]pprove / [e]dit / [r]eject:"
COMPARE = [
    "fetch A",
    {"step": "fetch B", "depends_on": []},
    {"step": "compare", "depends_on": [1, 2]},
    "report",
]
"""A plan whose third step waits for two others."""


@tool
def price(item: str) -> str:
    """The price of an item."""
    return "4.20"


def _model(*plans: list[Any]) -> FakeChatModel:
    """A model planning `plans` (one a turn), whose steps and turns all succeed."""
    return FakeChatModel(
        planner=[call("plan", steps=steps) for steps in plans],
        executor=[text("done")] * 12,
        replanner=[respond("finished")] * len(plans),
    )


def _asked(value: dict[str, Any]) -> tuple[list[Any], str]:
    """The steps and the description of a review pause."""
    (request,) = value["action_requests"]
    return request["args"]["steps"], request["description"]


def _answer(graph: Any, answer: Any) -> dict[str, Any]:
    return run(graph, Command(resume=answer), config=CONFIG, context=APPROVE)


def _paused(steps: list[Any], tools: list[Any] | None = None) -> Any:
    """A graph paused at the review of `steps`."""
    graph = build_plan_execute_graph(
        _model(steps), tools or [], checkpointer=InMemorySaver(), task_tools="compact"
    )
    run(graph, "Compare A and B", config=CONFIG, context=APPROVE)
    return graph


# --- the review node: a change to one step ------------------------------------------------------


def test_a_dropped_step_leaves_its_dependents_waiting_for_what_it_waited_for() -> None:
    graph = _paused(COMPARE)
    (pending,) = _answer(graph, {"action": "drop", "step": 2})["__interrupt__"]
    assert _asked(pending.value)[0] == ["fetch A", "compare", "report"]
    (pending,) = _answer(graph, {"action": "drop", "step": 1})["__interrupt__"]
    assert _asked(pending.value)[0] == ["compare", "report"]  # waiting for nothing, first
    done = _answer(graph, "approve")
    assert done["response"] == "finished"
    assert [(s["id"], s["step"]) for s in done["executed_steps"]] == [(1, "compare"), (2, "report")]


def test_a_new_text_keeps_what_the_step_waits_for() -> None:
    graph = _paused(COMPARE)
    (pending,) = _answer(graph, {"action": "edit", "step": 3, "text": "contrast"})["__interrupt__"]
    assert _asked(pending.value)[0][2] == {"step": "contrast", "depends_on": [1, 2]}
    whole = '{"step": "sum up", "depends_on": [1]}'  # a step object replaces the step whole
    (pending,) = _answer(graph, {"action": "edit", "step": 4, "text": whole})["__interrupt__"]
    assert _asked(pending.value)[0][3] == {"step": "sum up", "depends_on": [1]}
    rejected = _answer(graph, {"action": "reject", "reason": "no"})  # the other answers stay
    assert rejected["stop_reason"] == "rejected"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"action": "drop", "step": 9}, "there is no step 9 (the plan has steps 1 to 4)"),
        (
            {"action": "edit", "step": 0, "text": "x"},
            "there is no step 0 (the plan has steps 1 to 4)",
        ),
        ({"action": "edit", "step": 2, "text": " "}, "step 2 is blank"),
    ],
)
def test_a_change_that_cannot_be_made_pauses_again_saying_why(
    change: dict[str, Any], problem: str
) -> None:
    graph = _paused(COMPARE)
    (pending,) = _answer(graph, change)["__interrupt__"]
    steps, description = _asked(pending.value)
    sent = json.dumps(change)
    assert description.startswith(f"The change {sent} cannot be made: {problem}. {REVIEW_ANSWERS}")
    assert steps == COMPARE


def test_a_step_whose_result_a_tool_step_uses_is_not_dropped() -> None:
    plan = ["pick an item", {"tool": "price", "args": {"item": "$1"}}]
    graph = _paused(plan, [price])
    (pending,) = _answer(graph, {"action": "drop", "step": 1})["__interrupt__"]
    steps, description = _asked(pending.value)
    assert "step 2 uses the result of step 1 (change or drop step 2 first)" in description
    assert steps == plan


def test_in_a_follow_up_turn_a_drop_keeps_the_numbers_of_the_turn_before() -> None:
    """The turn before carried out steps 1 and 2: the plan's steps are numbered 3, 4, 5, and
    a step may wait for a done one (which a renumbering by position would break)."""
    follow_up = ["c", {"step": "d", "depends_on": [1]}, "e"]
    graph = build_plan_execute_graph(
        _model(["a", "b"], follow_up), checkpointer=InMemorySaver(), task_tools="compact"
    )
    run(graph, "First", config=CONFIG, context=WHEN_NEEDED)
    run(graph, "Then", config=CONFIG, context=APPROVE)
    (pending,) = _answer(graph, {"action": "drop", "step": 1})["__interrupt__"]
    assert _asked(pending.value)[0] == [{"step": "d", "depends_on": [1]}, "e"]
    done = _answer(graph, "approve")
    assert [(s["id"], s["step"]) for s in done["executed_steps"]] == [(3, "d"), (4, "e")]


def test_edit_problems_are_those_no_run_takes() -> None:
    """What the command line refuses before resuming; the numbers are the review's to check."""
    assert edit_problems(['{"step": broken']) == (
        "step 1 looks like a JSON object but is not valid JSON"
    )
    assert edit_problems(["a", 7]) == 'step 2 is not a text or a {"step", "depends_on"} object'
    assert edit_problems([]) == "it has no steps"
    assert edit_problems("a") == "it is not a list of steps"
    assert edit_problems([{"step": "x", "depends_on": [7]}]) == ""
    assert edit_problems(["a", '{"step": "b", "depends_on": [1]}']) == ""


# --- the command line -------------------------------------------------------------------------


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ScriptedOpenAIServer]:
    """A plan–execute server; the in-process CLI runs in `tmp_path` and talks to it."""
    with ScriptedOpenAIServer(script.respond) as srv:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        yield srv


def _waiting(capsys: pytest.CaptureFixture[str], thread: str) -> None:
    waiting = invoke(
        capsys, "run", *PLANNED, "Ship it in 3 steps", "--thread-id", thread, "--approve-plan"
    )
    assert waiting.code == 4, waiting.err


def _question(capsys: pytest.CaptureFixture[str], thread: str) -> str:
    shown = json.loads(invoke(capsys, "show", "--thread-id", thread, "--json").out)
    return str(shown["review"]["question"])


@pytest.mark.parametrize(
    ("steps", "problem"),
    [
        (['{"step": broken'], "step 1 looks like a JSON object but is not valid JSON"),
        (["Fetch", '{"step": 3}'], 'step 2 is not a text or a {"step", "depends_on"} object'),
    ],
)
def test_an_edit_that_cannot_be_a_plan_is_refused_before_the_run_resumes(
    server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    steps: list[str],
    problem: str,
) -> None:
    _waiting(capsys, "t")
    asked, requests = _question(capsys, "t"), len(server.requests)
    refused = invoke(capsys, "resume", "--thread-id", "t", "--edit-plan", *steps)
    assert (refused.code, refused.out) == (4, "")
    assert refused.err == f"replan: the edited plan was not taken: {problem}\n"
    assert len(server.requests) == requests and _question(capsys, "t") == asked
    assert invoke(capsys, "resume", "--thread-id", "t", "--approve").code == 0


def test_an_edit_the_review_refuses_says_why_before_the_hint(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whether a step's numbers fit only the run knows: the review refuses, the line says why."""
    _waiting(capsys, "n")
    edit = '{"step": "x", "depends_on": [7]}'
    refused = invoke(capsys, "resume", "--thread-id", "n", "--edit-plan", edit)
    assert refused.code == 4
    said, hint = refused.err.splitlines()[-2:]
    assert said.startswith("replan: the edited plan was not taken: ")
    assert "step 1 depends on step 7" in said and hint.startswith("The plan is waiting")


def _at_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *answers: str
) -> Outcome:
    """`run --approve-plan` of 3 steps on thread `p`, as if on a terminal where `answers` are
    typed (each of them asked for)."""
    typed = iter(answers)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda: next(typed))
    args = ["--thread-id", "p", "--approve-plan"]
    done = invoke(capsys, "run", *PLANNED, "Ship it in 3 steps", *args)
    assert next(typed, None) is None, "an answer was not asked for"
    return done


def _steps_done(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The steps thread `p` carried out in its last turn."""
    shown = json.loads(invoke(capsys, "show", "--thread-id", "p", "--json").out)
    return [step["step"] for step in shown["executed_steps"]]


STEP = "Step {} of 3 [ship it in 3 steps]"
MINE = ["Step 1 of 2 [mine]", "Step 2 of 2 [mine]"]
"""A reviewer's steps (named as the scripted model carries out and answers them)."""
MINE_DONE = "All 2 steps of [mine] are done: RESULT 1/2, RESULT 2/2"


def test_at_the_prompt_a_refused_answer_says_why_and_asks_again(
    server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = ["maybe", "e", '{"step": broken', "", "[1,", "drop 4", "2:", "", "a"]
    done = _at_a_terminal(capsys, monkeypatch, *answers)
    assert done.code == 0
    lines = done.err.splitlines()
    for said in (
        "Not an answer: maybe (? lists the answers).",
        "The edited plan was not taken: step 1 looks like a JSON object but is not valid JSON.",
        "The edited plan was not taken: it is not a JSON list (Expecting value: line 1 column 4 "
        "(char 3)).",
        "The plan was not changed: there is no step 4 (the plan has steps 1 to 3).",
        "New text for step 2:",
        "The plan was not changed: the new text is empty.",
    ):
        assert said in lines
    assert lines.count(QUESTION) == 6
    assert _steps_done(capsys) == [STEP.format(i) for i in (1, 2, 3)]


def test_at_the_prompt_one_step_is_changed_or_dropped_keeping_the_others(
    server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = ["?", "drop 2", f"edit 2: {MINE[1]}", f"1: {MINE[0]}", "yes"]
    done = _at_a_terminal(capsys, monkeypatch, *answers)
    assert (done.code, done.out.strip()) == (0, MINE_DONE)
    assert (
        "  drop N              leave step N out; the steps that waited for it wait for what it"
        in done.err.splitlines()
    )
    for first, second in [(STEP.format(1), STEP.format(3)), (STEP.format(1), MINE[1]), MINE]:
        shown = f"The plan waits for your approval:\n1. {first}\n2. {second}\n(or change one step"
        assert shown in done.err
    assert f"Plan edited:\n  1. {MINE[0]}\n  2. {MINE[1]}\n" in done.err
    assert _steps_done(capsys) == MINE


def test_at_the_prompt_reject_takes_its_reason(
    server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rejected = _at_a_terminal(capsys, monkeypatch, "reject too long")
    assert rejected.code == 8 and "Reason: too long" in rejected.out


def test_at_the_prompt_a_json_list_is_the_whole_plan(
    server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    edited = _at_a_terminal(capsys, monkeypatch, json.dumps(MINE))
    assert (edited.code, edited.out.strip()) == (0, MINE_DONE)
    assert _steps_done(capsys) == MINE


def test_at_the_prompt_an_edit_the_review_refuses_says_why(
    server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    done = _at_a_terminal(capsys, monkeypatch, '[{"step": "x", "depends_on": [7]}]', "a")
    assert "step 1 depends on step 7" in done.err


def _type(terminal: Terminal, line: str, after: str, times: int) -> None:
    """Type `line` once `after` has been written `times` times."""
    with terminal.changed:
        assert terminal.changed.wait_for(
            lambda: terminal.output.decode(errors="replace").count(after) >= times, 60
        ), terminal.text()
    os.write(terminal.master, line.encode() + b"\r")


@pytest.mark.slow  # a real process on a pseudo-terminal
def test_on_a_terminal(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    args = [REPLAN, "run", *PLANNED, "Ship it in 3 steps", "--thread-id", "t", "--approve-plan"]
    terminal = Terminal(args, tmp_path, cli_env(server))
    _type(terminal, "e", QUESTION, 1)
    _type(terminal, '{"step": broken', "Step (empty line to finish):", 1)
    _type(terminal, "", "Step (empty line to finish):", 2)
    _type(terminal, "drop 1", QUESTION, 2)
    _type(terminal, "a", QUESTION, 3)
    assert terminal.finish() == 0, terminal.text()
    shown = terminal.text().replace("\r\n", "\n")
    assert (
        "The edited plan was not taken: step 1 looks like a JSON object but is not valid JSON.\n"
        in shown
    )
    assert f"The plan waits for your approval:\n1. {STEP.format(2)}\n2. {STEP.format(3)}\n" in shown
    assert "Traceback" not in shown
