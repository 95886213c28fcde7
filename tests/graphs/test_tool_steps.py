"""Tool steps: plan items that call the run's own tools directly, with no model call; their
references, the mistakes corrected before anything runs, calls not made twice, the `plan`
schema in every decision mode, numbers that do not move across a replan, and `tool_steps="off"`.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException, tool
from langgraph.checkpoint.memory import InMemorySaver

from replan.graphs.context import DECISION_MODES, Context, DecisionMode, ReplanMode
from replan.graphs.graph_state import ExecutedStep, PlannedStep
from replan.graphs.plan.decisions import PlanArgs, accept_plan, plan_tool
from replan.graphs.plan.numbering import Numbering
from replan.graphs.plan.own_tools import OwnTools
from replan.graphs.plan.tool_steps import number_at_end, number_written, substitute
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.graphs.prompts import DEFAULT_PROMPTS
from replan.testing import ScriptedOpenAIServer, tool_call
from replan.testing import plan_script as script
from replan.testing import text as said
from replan.testing.requests import step_tools, steps_schema
from replan.tools.calculator import calculator
from replan.tools.effects import declare_effects
from tests.support.fake_models import FakeChatModel, Mode, Request, both_modes, call, run, text
from tests.support.kill_gates import kill_at_gate
from tests.support.tool_step_child import CALLS_FILE, GATE_FILE, THREAD, looked_up

PRICES = {"A": 4.2, "B": 1.5}


@dataclass
class Kit:
    """The test's tools, recording every call they get; `together` makes the first
    `together.parties` calls of `price` wait for each other (proof they run side by side)."""

    calls: list[tuple[str, Any]] = field(default_factory=list)
    together: threading.Barrier | None = None
    flaky_failures: int = 1

    @property
    def tools(self) -> list[BaseTool]:
        kit = self

        @tool
        def price(item: str) -> str:
            """The price of an item, in EUR. Other text here."""
            kit.calls.append(("price", item))
            if kit.together is not None:
                kit.together.wait()
            return f"{PRICES[item]:.2f}"

        @tool
        def double(value: float) -> float:
            """Double a number."""
            kit.calls.append(("double", value))
            return value * 2

        @tool
        def note(text: str) -> str:
            """Write a note."""
            kit.calls.append(("note", text))
            return f"noted: {text}"

        @tool
        def flaky(city: str) -> str:
            """A clock service that is busy at first."""
            kit.calls.append(("flaky", city))
            if kit.flaky_failures:
                kit.flaky_failures -= 1
                raise ToolException("Error: busy, try again")
            return f"{city}: 09:30"

        read_only = [declare_effects(t, read_only=True) for t in (price, double)]
        return [*read_only, note, flaky]


def plan_call(*steps: Any) -> AIMessage:
    return call("plan", steps=list(steps))


def respond(response: str) -> AIMessage:
    return call("respond", response=response)


def price_step(item: str, *depends_on: int) -> dict[str, Any]:
    step: dict[str, Any] = {"tool": "price", "args": {"item": item}}
    if depends_on:
        step["depends_on"] = list(depends_on)
    return step


def report(request: Request) -> AIMessage:
    return text("report on " + request.prompt.rsplit("# Your step\n", 1)[-1])


WHEN_NEEDED = Context(replan="when_needed")
CONFIG: RunnableConfig = {"configurable": {"thread_id": "tool-steps"}}


def final_state(graph: Any) -> dict[str, Any]:
    values: dict[str, Any] = graph.get_state(CONFIG).values
    return values


# --- running tool steps -----------------------------------------------------------------------


@both_modes
def test_tool_steps_of_a_wave_run_side_by_side_with_no_model_call(mode: Mode) -> None:
    kit = Kit(together=threading.Barrier(2, timeout=10))
    model = FakeChatModel(
        planner=[
            plan_call(price_step("A"), price_step("B"), {"step": "Add", "depends_on": [1, 2]})
        ],
        executor=[report],
        replanner=[respond("5.70")],
    )
    graph = build_plan_execute_graph(model, kit.tools)
    result = run(graph, "Total of A and B", mode, context=WHEN_NEEDED)

    assert result["response"] == "5.70"
    assert sorted(kit.calls) == [("price", "A"), ("price", "B")]  # met at the barrier
    first, second, added = result["executed_steps"][:2] + result["executed_steps"][2:]
    assert {first["step"], second["step"]} == {'price(item="A")', 'price(item="B")'}
    assert first["status"] == second["status"] == "done"
    assert {(d["id"], d["result"]) for d in (first, second)} == {(1, "4.20"), (2, "1.50")}
    (executor,) = model.requests_of("executor")  # only the text step asked the model
    assert "4.20" in executor.prompt and "1.50" in executor.prompt
    assert added["result"] == "report on Add"


def test_a_text_step_that_spells_a_call_reads_as_that_call() -> None:
    tools = OwnTools(Kit().tools)
    assert tools.call_in_text("price(A)") == ("price", {"item": "A"})
    assert tools.call_in_text('price(item="B").') == ("price", {"item": "B"})
    assert tools.call_in_text("double($1)") == ("double", {"value": "$1"})  # whole text
    assert tools.call_in_text("double(value: $1 * 3)") == ("double", {"value": "$1 * 3"})
    assert tools.call_in_text("note(text='a b')") == ("note", {"text": "a b"})
    assert tools.call_in_text("Look up price(A) first") is None  # a sentence stays text
    assert tools.call_in_text("clock(Quito)") is None  # not a tool of the run
    assert tools.call_in_text("price(A, B)") is None  # more arguments than parameters


def test_json_words_in_a_spelled_call_read_as_their_values() -> None:
    @tool
    def lock(unlock: bool, doors: list[str], note: str | None) -> str:
        """Lock or unlock doors."""
        return "ok"

    tools = OwnTools([lock])
    spelled = "lock(unlock=true, doors=['front', 'back'], note=null)"
    assert tools.call_in_text(spelled) == (
        "lock",
        {"unlock": True, "doors": ["front", "back"], "note": None},
    )
    assert tools.call_in_text("lock(false, [], truth)") == (
        "lock",
        {"unlock": False, "doors": [], "note": "truth"},  # a bare word stays its text
    )


def test_a_call_spelled_where_the_tool_name_goes_reads_as_that_call() -> None:
    numbering = replace(Numbering.first_plan(), tools=OwnTools(Kit().tools))
    steps = [{"tool": "price(item='A')"}, {"tool": "double($1)", "depends_on": [1]}]
    plan = accept_plan(PlanArgs.model_validate({"steps": steps}, context=numbering), numbering)
    assert [(step["tool"], step["args"]) for step in plan] == [
        ("price", {"item": "A"}),
        ("double", {"value": "$1"}),
    ]
    unknown = {"steps": [{"tool": "weigh(item='A')"}]}
    with pytest.raises(ValueError, match="there is no tool `weigh"):
        PlanArgs.model_validate(unknown, context=numbering)


def test_a_follow_up_plan_numbered_from_1_by_mistake_refers_to_its_own_steps() -> None:
    """After a turn that did step 1, the next plan is numbered from 2; an item referring to
    "$1" and "$2" while it waits for the list's own first two items (2 and 3) means them.
    One that waits for the done step itself, or names no list item, keeps its references."""
    done: list[ExecutedStep] = [{"id": 1, "step": "price(item='A')", "result": "4"}]
    numbering = replace(Numbering.replan((), done), tools=OwnTools(Kit().tools))
    looks = [{"tool": "price", "args": {"item": "B"}}, {"tool": "price", "args": {"item": "C"}}]

    def third(**item: Any) -> list[PlannedStep]:
        steps = [*looks, {"tool": "note", "args": {"text": "$1 and $2"}, **item}]
        return accept_plan(PlanArgs.model_validate({"steps": steps}, context=numbering), numbering)

    assert third(depends_on=[1, 2, 3])[2]["args"] == {"text": "$2 and $3"}
    assert third(depends_on=[1, 2])[2]["args"] == {"text": "$1 and $2"}  # waits for done 1
    assert third()[2]["args"] == {"text": "$1 and $2"}


@both_modes
def test_a_small_model_listing_tool_calls_as_text_steps_gets_them_run_as_tool_steps(
    mode: Mode,
) -> None:
    """Small models list `price(A)` as a text step: it runs as the tool step it spells, with
    no executor model call."""
    kit = Kit()
    model = FakeChatModel(
        planner=[plan_call("price(A)", "price(B)", "double($1)")],
        replanner=[respond("done")],
    )
    graph = build_plan_execute_graph(model, kit.tools)
    result = run(graph, "Prices", mode, context=WHEN_NEEDED)

    assert sorted(kit.calls) == [("double", 4.2), ("price", "A"), ("price", "B")]
    assert [d["status"] for d in result["executed_steps"]] == ["done"] * 3
    assert model.requests_of("executor") == []  # no step asked the model


@both_modes
@pytest.mark.parametrize("replan", ["each_wave", "when_needed"])
def test_a_chain_of_references_passes_numbers_and_text(mode: Mode, replan: ReplanMode) -> None:
    """Three waves of tool steps; the model is asked once, at the end, in either replan mode
    (the plan was made for the calls' results)."""
    kit = Kit()
    model = FakeChatModel(
        planner=[
            plan_call(
                price_step("A"),
                {"tool": "double", "args": {"value": "$1"}},
                {"tool": "note", "args": {"text": "A costs $1 EUR, twice that is $2"}},
            )
        ],
        replanner=[respond("done")] * 3,
    )
    graph = build_plan_execute_graph(model, kit.tools)
    result = run(graph, "Chain", mode, context=Context(replan=replan))

    assert kit.calls == [
        ("price", "A"),
        ("double", 4.2),
        ("note", "A costs 4.20 EUR, twice that is 8.4"),
    ]
    assert [d["args"] for d in result["executed_steps"]] == [
        {"item": "A"},
        {"value": 4.2},
        {"text": "A costs 4.20 EUR, twice that is 8.4"},
    ]
    assert result["executed_steps"][1]["step"] == "double(value=4.2)"
    assert not model.requests_of("executor")
    assert len(model.requests_of("replanner")) == 1  # three waves, one question at the end


def test_a_calculator_step_computes_with_the_figure_a_look_up_gave() -> None:
    """`calculator("$1 * 12")` after a look-up answering in a sentence: the figure goes in."""

    @tool
    def unit_price(product: str) -> str:
        """The unit price of a product."""
        return f"{product}: 4.35 EUR per box"

    model = FakeChatModel(
        planner=[
            plan_call(
                {"tool": "unit_price", "args": {"product": "paper"}},
                {"tool": "calculator", "args": {"expression": "$1 * 12"}},
            )
        ],
        replanner=[respond("52.20 EUR")],
    )
    graph = build_plan_execute_graph(model, [unit_price, calculator])
    result = run(graph, "12 boxes of paper", context=WHEN_NEEDED)

    computed = result["executed_steps"][1]
    assert computed["args"] == {"expression": "4.35 * 12"}
    assert (computed["status"], computed["result"]) == ("done", "4.35 * 12 = 52.2")
    assert not model.requests_of("executor")


def test_a_small_model_writing_dollar_twelve_for_twelve_in_a_calculator_step_gets_twelve() -> None:
    """Small models write "$12 * 3.50" for twelve at 3.50: in a plan of one step, step 12 does
    not exist, so "$12" is twelve, where "$1" is a step (`money_as_numbers`). A tool that does
    not compute keeps the mistake, which is corrected."""
    model = FakeChatModel(
        planner=[
            plan_call(
                {"tool": "double", "args": {"value": 2}},
                {"tool": "calculator", "args": {"expression": "$12 * 3.50 + $1"}},
            )
        ],
        replanner=[respond("46")],
    )
    result = run(
        build_plan_execute_graph(model, [*Kit().tools, calculator]), "Cost", context=WHEN_NEEDED
    )

    assert result["executed_steps"][1]["result"] == "12 * 3.50 + 4.0 = 46"
    assert result["executed_steps"][1]["step"] == 'calculator(expression="12 * 3.50 + 4.0")'


def test_substitution_whole_inline_and_numbers() -> None:
    parameters = {
        "properties": {
            "text": {"type": "string"},
            "amount": {"type": "number"},
            "count": {"type": "integer"},
            "maybe": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            "items": {"type": "array", "items": {"type": "string"}},
        }
    }
    results = {1: " kettle costs 24.90 EUR ", 2: "40", 3: "Room 12: 40 chairs in it", 4: "8.0 km"}
    args = {
        "text": "$1",
        "amount": "$1",
        "count": "$2",
        "maybe": "$4",
        "items": ["$3", "x $2 y"],
    }
    assert substitute(args, results, parameters) == {
        "text": "kettle costs 24.90 EUR",
        "amount": 24.9,
        "count": 40,
        "maybe": 8.0,
        "items": ["Room 12: 40 chairs in it", "x 40 y"],
    }
    # no number at the end: the text goes, and the tool says what is wrong with it
    assert substitute({"amount": "$3"}, results, parameters) == {
        "amount": "Room 12: 40 chairs in it"
    }
    assert substitute({"count": "$4"}, results, parameters) == {"count": 8}
    assert [number_at_end(t) for t in ("-3", "1e3", "12 apples here", "")] == [
        -3,
        1000.0,
        None,
        None,
    ]


def test_a_computing_tool_takes_the_number_each_reference_holds() -> None:
    parameters = {"properties": {"expression": {"type": "string"}}}
    results = {1: "printer paper: 4.35 EUR per box", 2: "22.0 °C", 3: "Room 12: 40 chairs in it"}
    args = {"expression": "$1 * 12 - $2"}
    assert substitute(args, results, parameters, computes=True) == {
        "expression": "4.35 * 12 - 22.0"
    }
    # a result with two numbers, none at the end, goes in as text, and the tool says so
    assert substitute({"expression": "$3 + 1"}, results, parameters, computes=True) == {
        "expression": "Room 12: 40 chairs in it + 1"
    }
    # a tool that does not compute takes the text
    assert substitute(args, results, parameters) == {
        "expression": "printer paper: 4.35 EUR per box * 12 - 22.0 °C"
    }
    assert [
        number_written(t) for t in ("4.35 EUR per box", "1 box and 2 cans here", "none", "x = 52.2")
    ] == [
        "4.35",
        None,
        None,
        "52.2",
    ]


# --- mistakes are corrected, not run -------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ([{"tool": "clock", "args": {"city": "Quito"}}], "step 1: there is no tool `clock`"),
        (
            [{"tool": "price", "args": {"item": 3}}],
            "the arguments of `price` do not fit its schema",
        ),
        ([{"tool": "price", "args": {}}], 'leaves out the "args" of `price` but waits for no'),
        ([{"tool": "price", "args": {"item": "A", "size": 2}}], "`price` has no argument 'size'"),
        ([{"tool": "double", "args": {"value": "$1"}}], "step 1 refers to itself"),
        (
            [{"tool": "double", "args": {"value": "$2"}}, price_step("A")],
            "step 1 refers to $2, which comes after it",
        ),
        (
            [price_step("A"), {"tool": "double", "args": {"value": "$5"}}],
            "refers to $5, but the list has steps 1 to 2 (to write the number 5, leave out the $)",
        ),
        ([price_step("A", 2), price_step("B")], "step 1 depends on step 2, which comes after it"),
    ],
    ids=["unknown-tool", "bad-type", "missing-arg", "extra-arg", "self", "later", "missing", "dep"],
)
def test_each_kind_of_mistake_is_corrected_before_anything_runs(
    bad: list[Any], problem: str
) -> None:
    kit = Kit()
    model = FakeChatModel(
        planner=[plan_call(*bad), plan_call(price_step("B"))], replanner=[respond("1.50")]
    )
    graph = build_plan_execute_graph(model, kit.tools, checkpointer=InMemorySaver())
    run(graph, "Price of B", config=CONFIG)

    assert kit.calls == [("price", "B")]  # nothing of the mistaken plan ran
    correction = model.requests_of("planner")[1].prompt
    assert problem in correction
    assert final_state(graph)["corrected_mistakes"] == 1


# --- the same call is not made twice ------------------------------------------------------


@both_modes
def test_a_repeated_call_takes_the_earlier_result(mode: Mode) -> None:
    kit = Kit()
    model = FakeChatModel(
        planner=[plan_call(price_step("A"))],
        replanner=[plan_call(price_step("A"), price_step("B")), respond("ok")],
    )
    graph = build_plan_execute_graph(model, kit.tools, checkpointer=InMemorySaver())
    result = run(graph, "Prices", mode, config=CONFIG)

    assert kit.calls == [("price", "A"), ("price", "B")]
    again = result["executed_steps"][1]
    assert (again["id"], again["result"], again["reused_from"]) == (2, "4.20", 1)
    assert final_state(graph)["reused_calls"] == 1


def test_the_same_call_twice_in_one_wave_is_made_once() -> None:
    kit = Kit()
    model = FakeChatModel(
        planner=[plan_call(price_step("A"), price_step("A"))], replanner=[respond("ok")]
    )
    graph = build_plan_execute_graph(model, kit.tools, checkpointer=InMemorySaver())
    result = run(graph, "Prices", config=CONFIG, context=WHEN_NEEDED)

    assert kit.calls == [("price", "A")]
    assert [d.get("reused_from") for d in result["executed_steps"]] == [None, 1]


def test_a_call_of_a_tool_that_acts_is_made_each_time_it_is_planned() -> None:
    kit = Kit()
    note = {"tool": "note", "args": {"text": "hi"}}
    model = FakeChatModel(planner=[plan_call(note)], replanner=[plan_call(note), respond("ok")])
    graph = build_plan_execute_graph(model, kit.tools, checkpointer=InMemorySaver())
    result = run(graph, "Notes", config=CONFIG)

    assert kit.calls == [("note", "hi"), ("note", "hi")]
    assert all("reused_from" not in done for done in result["executed_steps"])


def test_a_look_up_after_a_step_that_acted_is_made_again() -> None:
    kit = Kit()
    note = {"tool": "note", "args": {"text": "hi"}}
    model = FakeChatModel(
        planner=[plan_call(price_step("A"), note)],  # one wave: the note may come first
        replanner=[plan_call(price_step("A")), respond("ok")],
    )
    graph = build_plan_execute_graph(model, kit.tools, checkpointer=InMemorySaver())
    run(graph, "Prices", config=CONFIG, context=WHEN_NEEDED)

    assert sorted(kit.calls) == [("note", "hi"), ("price", "A"), ("price", "A")]
    assert final_state(graph).get("reused_calls", 0) == 0


@both_modes
def test_a_failed_call_is_made_again_and_steps_referring_to_it_do_not_run(mode: Mode) -> None:
    kit = Kit()
    flaky = {"tool": "flaky", "args": {"city": "Quito"}}
    note = {"tool": "note", "args": {"text": "$1"}}
    model = FakeChatModel(
        planner=[plan_call(flaky, note)],
        # note: still step 2; after it failed, asked again, it is listed as it was
        replanner=[plan_call(flaky, note), respond("09:30"), plan_call(note)],
    )
    graph = build_plan_execute_graph(model, kit.tools, checkpointer=InMemorySaver())
    result = run(graph, "Time in Quito", mode, config=CONFIG)

    assert kit.calls == [("flaky", "Quito"), ("flaky", "Quito")]  # note never ran
    failed, skipped, retried = sorted(result["executed_steps"], key=lambda d: d["id"])
    assert (failed["status"], failed["result"]) == ("failed", "Error: busy, try again")
    assert skipped["status"] == "failed" and "refers to the result of step 1" in skipped["result"]
    assert (retried["status"], retried["result"]) == ("done", "Quito: 09:30")
    assert "reused_from" not in retried
    assert (
        'flaky(city="Quito") → Error: busy, try again [failed]'
        in model.requests_of("replanner")[0].prompt
    )


DOORS_SCHEMA = {
    "type": "object",
    "properties": {
        "unlock": {"type": "boolean"},
        "door": {"type": "array", "items": {"type": "string", "enum": ["driver", "passenger"]}},
        "times": {"type": "integer"},
    },
    "required": ["unlock", "door"],
}


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"unlock": True, "door": "all"}, 'door: "all" is not of type array'),
        ({"unlock": True, "door": ["driver", "boot"]}, 'door[1]: "boot" is not one of "driver"'),
        ({"unlock": "yes", "door": ["driver"]}, 'unlock: "yes" is not of type boolean'),
        ({"unlock": True, "door": ["driver"], "times": 1.5}, "times: 1.5 is not of type integer"),
        ({"unlock": True, "door": "$1.doors", "times": "$2"}, None),  # references: fit later
        ({"unlock": False, "door": ["passenger"], "times": 2}, None),
    ],
)
def test_a_tool_with_a_json_schema_gets_its_arguments_checked_too(
    args: dict[str, Any], problem: str | None
) -> None:
    """Tools described by a JSON schema (MCP tools, say) have no pydantic model to validate
    with: the types and allowed values the schema names are checked instead."""
    doors = StructuredTool.from_function(
        lambda **_: "ok", name="doors", description="Lock doors.", args_schema=DOORS_SCHEMA
    )
    found = OwnTools([doors]).problems("doors", args)
    if problem is None:
        assert found == []
    else:
        (said_problem,) = found
        assert said_problem.startswith("the arguments of `doors` do not fit its schema")
        assert problem in said_problem


# --- numbers that do not move ---------------------------------------------------------------


@both_modes
def test_numbers_are_kept_across_a_replan(mode: Mode) -> None:
    kit = Kit()
    note = {"step": "Note the date", "depends_on": []}  # a text step: the replanner is asked
    model = FakeChatModel(
        planner=[plan_call(price_step("A"), note, "Summarise the price")],
        executor=[report, report, report],
        replanner=[
            plan_call(
                "Summarise the price",  # re-listed: keeps number 3
                {"tool": "double", "args": {"value": "$1"}},  # 5: a done step's result
                {"step": "Report both", "depends_on": [3, 5]},  # 6
            ),
            plan_call({"step": "Report both", "depends_on": [3, 5]}),  # re-listed: still 6
            respond("ok"),
        ],
    )
    read_only = kit.tools[:2]  # no tool acts: step 5 runs beside step 3, not after it
    graph = build_plan_execute_graph(model, read_only, checkpointer=InMemorySaver())
    result = run(graph, "Price and double", mode, config=CONFIG)

    first_replan, second_replan, _ = (r.prompt for r in model.requests_of("replanner"))
    assert '1. price(item="A") → 4.20' in first_replan
    assert "3. Summarise the price" in first_replan
    assert "numbered from 4" in first_replan
    assert "5. double(value=4.2) → 8.4" in second_replan
    assert "6. Report both [after: 3, 5]" in second_replan
    assert "numbered from 7" in second_replan
    assert [(d["id"], d["step"]) for d in result["executed_steps"]] == [
        (1, 'price(item="A")'),
        (2, "Note the date"),
        (3, "Summarise the price"),
        (5, "double(value=4.2)"),
        (6, "Report both"),
    ]
    summary = next(r for r in model.requests_of("executor") if "Report both" in r.prompt).prompt
    assert "report on Summarise the price" in summary and "8.4" in summary


# --- the plan schema in every decision mode; tool_steps="off" -----------------------------


def _no_refs(value: Any) -> bool:
    return "$ref" not in json.dumps(value)


@pytest.mark.parametrize("mode", DECISION_MODES)
def test_every_decision_mode_offers_the_tools_in_the_plan_schema(
    mode: DecisionMode, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    kit = Kit()

    def responder(request: dict[str, Any]) -> Any:
        if script.classify(request).role == "planner":
            return tool_call("plan", {"steps": [price_step("A")]})
        if script.classify(request).role == "answer":  # the answer, in plain text
            return said("4.20")
        return tool_call("respond", {"response": "4.20"})

    with ScriptedOpenAIServer(responder) as server:
        context = Context(model="m", base_url=server.base_url, max_retries=0, decision_mode=mode)
        result = run(build_plan_execute_graph(tools=kit.tools), "Price of A", context=context)
        planner = server.requests[0]

    assert result["response"] == "4.20" and kit.calls == [("price", "A")]
    assert step_tools(planner) == ["price", "double", "note", "flaky"]
    branches = steps_schema(planner)["items"]["anyOf"]
    double = next(
        b for b in branches if b.get("properties", {}).get("tool") == {"enum": ["double"]}
    )
    assert double["additionalProperties"] is False
    arguments = double["properties"]["args"]
    assert arguments["additionalProperties"] is False and arguments["required"] == ["value"]
    assert arguments["properties"]["value"]["anyOf"][0]["type"] == "number"
    assert _no_refs(planner) and "const" not in json.dumps(steps_schema(planner))


TODAYS_PLAN_PARAMETERS = {
    "type": "object",
    "properties": {
        "steps": {
            "type": "array",
            "minItems": 1,
            "items": {
                "anyOf": [
                    {"type": "string"},
                    {
                        "type": "object",
                        "properties": {
                            "step": {"type": "string"},
                            "depends_on": {"type": "array", "items": {"type": "integer"}},
                        },
                        "required": ["step"],
                    },
                ]
            },
            "description": DEFAULT_PROMPTS.plan_steps,
        }
    },
    "required": ["steps"],
}
"""The `plan` parameters before tool steps existed: what `tool_steps="off"` still sends."""


def test_off_keeps_the_plan_schema_and_prompt_and_refuses_tool_steps() -> None:
    kit = Kit()
    assert plan_tool(DEFAULT_PROMPTS).parameters == TODAYS_PLAN_PARAMETERS
    assert plan_tool(DEFAULT_PROMPTS, OwnTools(kit.tools)).parameters != TODAYS_PLAN_PARAMETERS
    model = FakeChatModel(
        planner=[plan_call(price_step("A")), plan_call("Find the price of A")],
        executor=[call("price", item="A"), text("A costs 4.20")],
        replanner=[respond("4.20")],
    )
    graph = build_plan_execute_graph(model, kit.tools, checkpointer=InMemorySaver())
    run(graph, "Price of A", config=CONFIG, context=Context(tool_steps="off"))

    first, second = model.requests_of("planner")
    assert first.messages[-1].content.endswith(
        "\n\n" + DEFAULT_PROMPTS.planner.format(tools="", computing="")  # no computing tool
    )
    assert "tool steps are not offered in this run" in second.prompt
    assert kit.calls == [("price", "A")]  # by the executor's model, as before
    assert final_state(graph)["executed_steps"][0]["result"] == "A costs 4.20"


def graph_tools(kit: Kit) -> list[BaseTool]:
    """The tools the executor of a default run is offered: the kit's, then the task tools."""
    from replan.graphs.model.offers import tool_offers

    return list(tool_offers(kit.tools, "en")["compact"].tools)


# --- a crash in the middle of a wave of tool steps ------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "waves"),
    [((), "one wave side by side"), (("acting",), "one wave each, saved with sync")],
    ids=["read-only", "acting"],
)
def test_a_run_killed_in_a_wave_of_tool_steps_resumes_without_calling_done_ones_again(
    tmp_path: Path, variant: tuple[str, ...], waves: str
) -> None:
    """Four look-ups (as `waves` says); the fourth holds until the other three's results are saved,
    then the process is killed. Resumed, only the fourth runs again: a done step's call is
    not repeated, whether it ran beside the killed one or in a wave before it."""
    command = [sys.executable, "-m", "tests.support.tool_step_child", str(tmp_path)]
    child = subprocess.Popen(
        [*command, "run", *variant], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    kill_at_gate(child, tmp_path / GATE_FILE)
    with sqlite3.connect(tmp_path / "runs.sqlite") as db:
        saved = db.execute(
            "SELECT count(DISTINCT task_id) FROM writes WHERE thread_id = ? "
            "AND channel = 'executed_steps'",
            (THREAD,),
        ).fetchone()[0]
    assert saved == 3
    made = looked_up(tmp_path)
    assert (made if variant else sorted(made)) == [1, 2, 3, 4]

    resumed = subprocess.run(
        [*command, "resume", *variant], text=True, capture_output=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(looked_up(tmp_path)) == [1, 2, 3, 4, 4]  # only the unfinished one again
    outcome = json.loads(resumed.stdout)
    assert outcome["response"] == "looked up 4 things"
    assert sorted(outcome["ids"]) == [1, 2, 3, 4]  # each step recorded once
    assert (tmp_path / CALLS_FILE).exists()


@tool
def copy_file(source: str, destination: str) -> str:
    """Copy a file."""
    return f"copied {source} to {destination}"


@tool
def list_files(hidden: bool = False) -> str:
    """List the files of the current folder."""
    return "a.txt"


def test_a_text_step_holding_several_calls_quoted_across_stays_a_text_step() -> None:
    """A small model wrote one text step `copy_file(source="a'), copy_file(source='b")`: read as
    one call, its argument was the text of both (quotes opened by one call, closed by the
    other); such a step is left to the executor."""
    tools = OwnTools([copy_file])
    merged = "copy_file(source=\"a.txt'), copy_file(source='b.txt\", destination='backup')"
    assert tools.call_in_text(merged) is None
    assert tools.call_in_text("copy_file(source='a.txt', destination='backup')") == (
        "copy_file",
        {"source": "a.txt", "destination": "backup"},
    )


def test_a_yes_or_no_argument_is_offered_no_reference_to_a_result() -> None:
    """A small model copying the prompt's "$1" put an earlier step's result into a yes/no
    argument (`list_files(hidden="$1")`): the plan schema offers a reference for numbers only."""
    (item,) = OwnTools([list_files]).item_schemas
    assert item["properties"]["args"]["properties"]["hidden"] == {
        "type": "boolean",
        "default": False,
    }
    numbers = OwnTools([calculator]).item_schemas[0]["properties"]["args"]["properties"]
    assert "anyOf" not in numbers["expression"]  # a string takes "$N" inside it as it is
