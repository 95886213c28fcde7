"""A whole reference `"$N"` in a string argument, where step N's result is JSON (as many APIs
answer): one field's value goes in; any other object or list does not, and the step fails
without a call, naming the result's fields (on the real model, a development entry's plan put
a file search's whole answer into a copy's source)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver

from replan.graphs.plan.tool_steps import WholeResult, substitute
from replan.graphs.plan_execute import build_plan_execute_graph
from tests.support.fake_models import FakeChatModel, Mode, both_modes, call, run

PARAMETERS = {
    "properties": {
        "name": {"type": "string"},
        "size": {"type": "integer"},
        "names": {"type": "array", "items": {"type": "string"}},
    }
}
RESULTS = {
    1: '{"folder": "docs"}',
    2: '{"matches": ["a.txt", "b.txt"]}',
    3: '{"price": 3.5, "volume": 12}',
    4: '["a.txt", "b.txt"]',
    5: "{not json",
    6: '{"size": 42}',
}


def test_the_one_value_of_a_one_field_object_goes_into_a_string() -> None:
    assert substitute({"name": "$1"}, RESULTS, PARAMETERS) == {"name": "docs"}
    assert substitute({"name": "$6"}, RESULTS, PARAMETERS) == {"name": "42"}
    assert substitute({"size": "$6"}, RESULTS, PARAMETERS) == {"size": 42}
    # text that only looks like JSON, a reference inside a longer string, and a list argument
    # are left as they were
    assert substitute({"name": "$5"}, RESULTS, PARAMETERS) == {"name": "{not json"}
    assert substitute({"name": "in $1"}, RESULTS, PARAMETERS) == {"name": 'in {"folder": "docs"}'}
    assert substitute({"names": ["$1"]}, RESULTS, PARAMETERS) == {"names": ['{"folder": "docs"}']}


@pytest.mark.parametrize(
    ("number", "shape"),
    [
        (
            2,
            '$2 is a JSON object with the fields matches: name the field it needs, as "$2.matches"',
        ),
        (
            3,
            "$3 is a JSON object with the fields price, volume: "
            'name the field it needs, as "$3.price"',
        ),
        (4, '$4 is a JSON list of 2 items: name the item it needs, as "$4[0]"'),
    ],
)
def test_any_other_object_or_list_does_not_go_into_a_string(number: int, shape: str) -> None:
    with pytest.raises(WholeResult) as refused:
        substitute({"name": f"${number}"}, RESULTS, PARAMETERS)
    assert (refused.value.argument, refused.value.shape) == ("name", shape)
    # a computing tool takes the numbers references hold, as before
    computed = substitute({"name": "$3"}, RESULTS, PARAMETERS, computes=True)
    assert computed == {"name": RESULTS[3]}


@pytest.mark.parametrize(
    ("number", "shape"),
    [
        (2, "$2 is a JSON object with the fields matches"),
        (
            3,
            "$3 is a JSON object with the fields price, volume: "
            'name the field it needs, as "$3.price"',
        ),
        (4, '$4 is a JSON list of 2 items: name the item it needs, as "$4[0]"'),
    ],
)
def test_an_object_or_list_with_no_one_number_does_not_go_into_a_number(
    number: int, shape: str
) -> None:
    """Before, a whole result holding no single number went into a number argument as its
    text (a folder listing given to a logarithm's `value`)."""
    with pytest.raises(WholeResult) as refused:
        substitute({"size": f"${number}"}, RESULTS, PARAMETERS)
    assert (refused.value.argument, refused.value.shape) == ("size", shape)
    labelled = {7: '{"count": 36, "type": "characters"}'}
    assert substitute({"size": "$7"}, labelled, PARAMETERS) == {"size": 36}


def _tools(calls: list[tuple[str, str]]) -> list[BaseTool]:
    @tool
    def find(pattern: str) -> str:
        """Find files whose name holds `pattern`."""
        calls.append(("find", pattern))
        return json.dumps({"matches": ["report.txt", "report-old.txt"]})

    @tool
    def remove(name: str) -> str:
        """Remove one file."""
        calls.append(("remove", name))
        return json.dumps({"removed": name})

    return [find, remove]


@both_modes
def test_the_step_fails_without_a_call_and_the_replanner_reads_why(mode: Mode) -> None:
    calls: list[tuple[str, str]] = []
    find = {"tool": "find", "args": {"pattern": "report"}}
    whole = {"tool": "remove", "args": {"name": "$1"}}
    fixed: dict[str, Any] = {"tool": "remove", "args": {"name": "report-old.txt"}}
    model = FakeChatModel(
        planner=[call("plan", steps=[find, whole])],
        replanner=[call("plan", steps=[fixed]), call("respond", response="removed")],
    )
    graph = build_plan_execute_graph(model, _tools(calls), checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "whole-results"}}
    result = run(graph, "Remove the old report", mode, config=config)

    assert calls == [("find", "report"), ("remove", "report-old.txt")]
    refused = result["executed_steps"][1]
    assert refused["status"] == "failed"
    expected = (
        "Not run: `name` takes one value, and $1 is a JSON object with the fields matches: "
        'name the field it needs, as "$1.matches".'
    )
    assert refused["result"] == expected
    assert expected in model.requests_of("replanner")[0].prompt
    assert result["response"] == "removed"
