"""Arguments that come from somewhere: a template's value, a result's text where an identifier
goes, or an id found in no message or result is a mistake the planner or executor is told
about, once, before any call is made (on the real small model: `your_username`, a status line
passed as a name, tokens made up)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver

from replan.graphs.plan.provenance import Provenance
from replan.graphs.plan_execute import build_plan_execute_graph
from tests.support.fake_models import (
    FakeChatModel,
    Mode,
    both_modes,
    call,
    calls,
    plan,
    respond,
    run,
    text,
)

PARAMETERS: dict[str, Any] = {
    "properties": {
        "user": {"type": "string"},
        "mode": {"type": "string", "enum": ["fast", "safe"]},
        "folder": {
            "type": "string",
            "description": "A folder; the default is archive.",
            "default": "archive",
        },
        "note": {"type": "string"},
    }
}
SOURCES = Provenance(
    given=("Log in as ann.lee and archive docs/report.txt, then note it.",),
    read={1: '{"token": "tk-93f1", "expires": "2026-12-01"}', 2: "No such file or directory"},
)


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (
            {"user": "your_username"},
            '`user` is "your_username", a template\'s value, not the real one',
        ),
        ({"user": "<user name>"}, '`user` is "<user name>", a template\'s value, not the real one'),
        (
            {"user": "bob@example.com"},
            '`user` is "bob@example.com", a template\'s value, not the real one',
        ),
        ({"folder": "None"}, '`folder` is "None", a template\'s value, not the real one'),
        (
            {"folder": "No such file or directory"},
            '`folder` is given the text of step 2\'s result ("No such file or directory"), not '
            "a value from it",
        ),
        (
            {"user": "tk-0000"},
            '`user` is "tk-0000", which appears nowhere in the request or the results',
        ),
        (
            {"note": ["ann.lee", "id-777"]},
            '`note[1]` is "id-777", which appears nowhere in the request or the results',
        ),
    ],
)
def test_a_value_from_nowhere_is_named(args: dict[str, Any], problem: str) -> None:
    sources = Provenance(SOURCES.given, SOURCES.read)
    assert [found for _, found in sources.problems(args, PARAMETERS)] == [problem]
    assert sources.problems(args, PARAMETERS) == []  # told once: taken when written again


@pytest.mark.parametrize(
    "args",
    [
        {"user": "ann.lee"},  # the user wrote it
        {"user": "TK-93F1"},  # a result holds it
        {"folder": "docs/report.txt"},  # every part of the path was written
        {"folder": "archive"},  # the tool's documented default
        {"mode": "fast"},  # an allowed value
        {"user": "42", "note": "2026-12-03"},  # numbers and dates are often worked out
        {"note": "Archived the report as asked"},  # a sentence is written, not found
        {"user": "$1.token", "note": "ok"},  # a reference, and text too short to say anything
    ],
)
def test_a_value_that_comes_from_somewhere_is_taken(args: dict[str, Any]) -> None:
    assert Provenance(SOURCES.given, SOURCES.read).problems(args, PARAMETERS) == []


def _tools(calls: list[tuple[str, Any]]) -> list[BaseTool]:
    @tool
    def find_user(name: str) -> str:
        """Find a user's id by name."""
        calls.append(("find_user", name))
        return '{"id": "u-5521", "name": "Ann Lee"}'

    @tool
    def suspend(user_id: str) -> str:
        """Suspend a user."""
        calls.append(("suspend", user_id))
        return f"suspended {user_id}"

    return [find_user, suspend]


@both_modes
def test_a_planned_id_from_nowhere_is_corrected_before_any_call(mode: Mode) -> None:
    made: list[tuple[str, Any]] = []
    guessed = {"tool": "suspend", "args": {"user_id": "u-1234"}}
    looked_up = [
        {"tool": "find_user", "args": {"name": "Ann Lee"}},
        {"tool": "suspend", "args": {"user_id": "$1.id"}},
    ]
    model = FakeChatModel(
        planner=[call("plan", steps=[guessed]), call("plan", steps=looked_up)],
        replanner=[respond("suspended Ann Lee")],
    )
    graph = build_plan_execute_graph(model, _tools(made), checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "sources"}}
    result = run(graph, "Suspend Ann Lee", mode, config=config)

    assert made == [("find_user", "Ann Lee"), ("suspend", "u-5521")]  # the guess never ran
    first, corrected = model.requests_of("planner")
    problem = '`user_id` is "u-1234", which appears nowhere in the request or the results'
    assert problem in corrected.prompt and problem not in first.prompt
    assert result["response"] == "suspended Ann Lee"


@both_modes
def test_a_value_written_again_after_the_correction_is_taken(mode: Mode) -> None:
    made: list[tuple[str, Any]] = []
    insisted = {"tool": "suspend", "args": {"user_id": "u-1234"}}
    model = FakeChatModel(
        planner=[call("plan", steps=[insisted]), call("plan", steps=[insisted])],
        replanner=[respond("done")],
    )
    run(build_plan_execute_graph(model, _tools(made)), "Suspend the usual test user", mode)

    assert made == [("suspend", "u-1234")]
    assert len(model.requests_of("planner")) == 2


@both_modes
def test_an_executor_call_with_a_template_value_is_not_made_and_is_corrected(mode: Mode) -> None:
    made: list[tuple[str, Any]] = []
    model = FakeChatModel(
        planner=[plan("Suspend the user Ann Lee")],
        executor=[
            call("suspend", user_id="your_user_id"),
            calls(("find_user", {"name": "Ann Lee"})),
            call("suspend", user_id="u-5521"),
            text("Ann Lee (u-5521) is suspended."),
        ],
        replanner=[respond("suspended")],
    )
    run(build_plan_execute_graph(model, _tools(made), task_tools="none"), "Suspend Ann Lee", mode)

    assert made == [("find_user", "Ann Lee"), ("suspend", "u-5521")]
    told = model.requests_of("executor")[1].messages[-1]
    assert told.text.startswith('Not called: `user_id` is "your_user_id", a template\'s value')
