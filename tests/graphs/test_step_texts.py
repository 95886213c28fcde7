"""Two defects seen on the real small model: quotes in step texts came back as `&#34;`, and a
replanner copied its prompt's computing note into a step, twice, until the run stopped as
making no progress."""

from __future__ import annotations

from langchain_core.tools import tool

from replan.graphs.plan.decisions import step_text
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
