"""Two defects seen on the real small model: quotes in step texts came back as `&#34;`, and a
replanner copied its prompt's computing note into a step, twice, until the run stopped as
making no progress."""

from __future__ import annotations

import pytest
from langchain_core.tools import tool

from replan.graphs.plan.decisions import step_text
from replan.graphs.plan.numbering import Item, Numbering
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.graphs.prompts import DEFAULT_PROMPTS
from replan.tools.calculator import calculator
from tests.support.fake_models import (
    FakeChatModel,
    Mode,
    both_modes,
    call,
    plan,
    respond,
    run,
    text,
)


def test_html_character_references_in_a_step_are_read() -> None:
    assert step_text("Write &#34;hello&#34; to notes") == 'Write "hello" to notes'
    assert step_text("Say &quot;done&quot; &amp; stop") == 'Say "done" & stop'
    assert step_text("2. Compare A &lt; B") == "Compare A < B"


@both_modes
def test_a_step_written_with_character_references_runs_with_its_quotes(mode: Mode) -> None:
    model = FakeChatModel(
        planner=[plan("Reply with the word &#34;ready&#34;")],
        executor=[text("ready")],
        replanner=[respond("ready")],
    )
    result = run(build_plan_execute_graph(model, task_tools="compact"), "Say ready", mode)

    assert result["executed_steps"][0]["step"] == 'Reply with the word "ready"'
    assert '"ready"' in model.requests_of("executor")[0].prompt
    assert "&#34;" not in model.requests_of("executor")[0].prompt


@tool
def lamp_price() -> str:
    """The price of one lamp."""
    return "one lamp costs 18.40 CHF"


@both_modes
def test_a_step_copying_the_computing_note_is_a_mistake_the_replanner_corrects(mode: Mode) -> None:
    note = DEFAULT_PROMPTS.replanner_computing.format(tools="`calculator`").strip()
    model = FakeChatModel(
        planner=[call("plan", steps=[{"tool": "lamp_price", "args": {}}])],
        replanner=[
            plan(note),
            call("plan", steps=[{"tool": "calculator", "args": {"expression": "$1 * 3"}}]),
            respond("three lamps cost 55.2 CHF"),
        ],
    )
    graph = build_plan_execute_graph(model, [lamp_price, calculator], task_tools="none")
    result = run(graph, "What do three lamps cost?", mode)

    assert result["response"] == "three lamps cost 55.2 CHF"
    assert [step["step"] for step in result["executed_steps"]] == [
        "lamp_price()",
        'calculator(expression="18.40 * 3")',
    ]
    first, corrected, _ = model.requests_of("replanner")
    problem = "step 2 copies your instructions instead of saying what to do"
    assert problem in corrected.prompt and problem not in first.prompt
    assert model.requests_of("executor") == []  # the copied note never ran


@tool
def get_webpage(url: str) -> str:
    """The text of the web page at `url`."""
    return f"the page at {url} says hello"


@tool
def fetchPage(url: str) -> str:  # noqa: N802 (named as some APIs name their tools)
    """The raw HTML of the page at `url`."""
    return f"<p>the page at {url} says hello</p>"


@both_modes
@pytest.mark.parametrize(
    "name", ["read_webpage", "read_webpage()", "web.fetch", "get_webpage", "fetchPage"]
)
def test_a_text_step_that_is_only_a_name_is_a_mistake_the_planner_corrects(
    mode: Mode, name: str
) -> None:
    page = {"tool": "get_webpage", "args": {"url": "www.example.org"}}
    model = FakeChatModel(
        planner=[plan(name), call("plan", steps=[page])],
        replanner=[respond("it says hello")],
    )
    graph = build_plan_execute_graph(model, [get_webpage, fetchPage], task_tools="none")
    result = run(graph, "Read the page www.example.org", mode)

    assert result["executed_steps"][0]["step"] == 'get_webpage(url="www.example.org")'
    first, corrected = model.requests_of("planner")
    problem = f'step 1 is only a name ("{name}"): say what the step must do, or call a tool'
    assert problem in corrected.prompt and problem not in first.prompt
    assert model.requests_of("executor") == []  # the name never ran as a step


def test_a_step_of_words_is_not_a_name() -> None:
    numbering = Numbering(tools=None)
    for words in ("Summarise", "Read www.example.org", "Compare the prices of 2 lamps."):
        assert not any("only a name" in p for p in numbering.problems([Item(words)]))
    assert numbering.problems([Item("fetch_page")]) == [
        'step 1 is only a name ("fetch_page"): say what the step must do'
    ]
