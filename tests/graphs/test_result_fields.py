"""A tool step's argument may name a part of an earlier result: `$2.id`, `$2.items[0].price`,
`$3.rows[-1]` (small models copied whole results where one field was needed, then guessed the
value when the whole was refused); a path that names nothing fails the step without a call,
saying what is there; money stays money; the planner is shown what a tool returns where the tool
says so."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from typing_extensions import TypedDict

from replan.graphs.plan.own_tools import OwnTools
from replan.graphs.plan.references import (
    REFERENCE,
    REFERENCE_SCHEMA,
    UnresolvedPath,
    references,
    renumber,
)
from replan.graphs.plan.tool_steps import WholeResult, money_as_numbers, substitute
from replan.graphs.plan_execute import build_plan_execute_graph
from tests.support.fake_models import FakeChatModel, Mode, both_modes, call, run

PARAMETERS = {
    "properties": {
        "name": {"type": "string"},
        "count": {"type": "integer"},
        "price": {"type": "number"},
        "names": {"type": "array", "items": {"type": "string"}},
        "anything": {},
    }
}
ORDER = {"id": 7, "owner": "ann", "items": [{"price": 2.5, "sku": "A-1"}, {"price": 3, "sku": "B"}]}
RESULTS = {1: json.dumps(ORDER), 2: '["x.txt", "y.txt"]', 3: "{'total': 12}", 4: "plain text"}


@pytest.mark.parametrize(
    ("args", "called"),
    [
        ({"name": "$1.owner"}, {"name": "ann"}),
        ({"count": "$1.id"}, {"count": 7}),
        ({"price": "$1.items[-1].price"}, {"price": 3}),
        ({"price": "$1.items.[0].price"}, {"price": 2.5}),
        ({"name": "$1.items[0].sku"}, {"name": "A-1"}),
        ({"name": "$1.id"}, {"name": "7"}),  # a number where text goes, as text
        ({"name": "$2[1]"}, {"name": "y.txt"}),
        ({"names": "$2"}, {"names": ["x.txt", "y.txt"]}),  # a whole list where a list goes
        ({"names": ["$1.owner", "$2[0]"]}, {"names": ["ann", "x.txt"]}),
        ({"anything": "$1.items[1]"}, {"anything": {"price": 3, "sku": "B"}}),
        ({"count": "$3.total"}, {"count": 12}),  # a result printed as a Python literal
        ({"name": "order $1.id of $1.owner"}, {"name": "order 7 of ann"}),
        ({"name": "first: $1.items[0]"}, {"name": 'first: {"price": 2.5, "sku": "A-1"}'}),
    ],
)
def test_a_path_names_a_part_of_a_result(args: dict[str, Any], called: dict[str, Any]) -> None:
    assert substitute(args, RESULTS, PARAMETERS) == called


@pytest.mark.parametrize(
    ("reference", "problem"),
    [
        ("$1.idd", "$1 is a JSON object with the fields id, owner, items"),
        ("$1.items[2].price", "$1.items is a JSON list of 2 items"),
        ("$1.owner.name", "$1.owner is not a JSON object or list"),
        ("$2.name", "$2 is a JSON list of 2 items"),
        ("$4.id", "step 4's result is not a JSON object or list"),
    ],
)
def test_a_path_that_names_nothing_says_what_is_there(reference: str, problem: str) -> None:
    with pytest.raises(UnresolvedPath) as unresolved:
        substitute({"name": reference}, RESULTS, PARAMETERS)
    assert (unresolved.value.reference, unresolved.value.problem) == (reference, problem)


def test_a_list_or_object_a_path_names_does_not_go_into_text() -> None:
    with pytest.raises(WholeResult) as refused:
        substitute({"name": "$1.items"}, RESULTS, PARAMETERS)
    assert refused.value.shape == (
        '$1.items is a JSON list of 2 items: name the item it needs, as "$1.items[0]"'
    )


def test_money_is_not_a_reference() -> None:
    for money in ("$2.50", "$1,000", "$40"):
        assert REFERENCE.fullmatch(money) is None or money == "$40"
    assert references("costs $2.50 or $1,000, then $3.total and $4[0]") == {3, 4}
    # in a computing tool's expression, amounts are numbers and references stay
    expression = money_as_numbers("$1.id * $2.50 + $40 + $1,000", nameable={1})
    assert expression == "$1.id * 2.50 + 40 + 1000"


def test_renumbering_keeps_paths() -> None:
    args = {"name": "$3.items[0].sku", "names": ["$3.owner", "$4"]}
    assert renumber(args, {3: 8, 4: 9}) == {"name": "$8.items[0].sku", "names": ["$8.owner", "$9"]}


def test_the_reference_pattern_is_one_a_grammar_enforcing_server_can_convert() -> None:
    # llama.cpp's JSON-schema grammars take no escape inside a character class (`[\\w-]`):
    # given one, llama-server accepts any string there and enforces none of the plan's types.
    classes = re.findall(r"\[((?:\\.|[^\]])*)\]", REFERENCE_SCHEMA["pattern"])
    assert classes, REFERENCE_SCHEMA["pattern"]
    assert not [c for c in classes if "\\" in c], classes


def test_the_plan_schema_takes_paths_where_numbers_and_lists_go() -> None:
    pattern = re.compile(REFERENCE_SCHEMA["pattern"])
    for written in ("$2", "$2.id", "$2.items[0].price", "$3.rows[-1]", "$4[0]", "$4.[0]"):
        assert pattern.fullmatch(written), written
    for written in ("$2.", "$2.50", "$0", "$2..id", "2.id", "$2[x]"):
        assert not pattern.fullmatch(written), written

    @tool
    def pick(count: int, names: list[str], label: str) -> str:
        """Pick some."""
        return label

    properties = OwnTools([pick]).item_schemas[0]["properties"]["args"]["properties"]
    assert properties["count"]["anyOf"][1] == REFERENCE_SCHEMA
    assert properties["names"]["anyOf"][1] == REFERENCE_SCHEMA
    assert "anyOf" not in properties["label"]  # text takes a reference as it is


class Found(TypedDict):
    """What `find` returns."""

    matches: list[str]
    folder: str


def _tools(calls: list[tuple[str, str]]) -> list[BaseTool]:
    @tool
    def find(pattern: str) -> Found:
        """Find files whose name holds `pattern`."""
        calls.append(("find", pattern))
        return {"matches": ["report.txt", "report-old.txt"], "folder": "docs"}

    @tool
    def remove(name: str) -> str:
        """Remove one file."""
        calls.append(("remove", name))
        return f"removed {name}"

    return [find, remove]


@both_modes
def test_a_plan_removes_the_file_a_look_up_found_by_its_field(mode: Mode) -> None:
    calls: list[tuple[str, str]] = []
    find = {"tool": "find", "args": {"pattern": "report"}}
    remove = {"tool": "remove", "args": {"name": "$1.matches[-1]"}}
    model = FakeChatModel(
        planner=[call("plan", steps=[find, remove])],
        replanner=[call("respond", response="removed report-old.txt")],
    )
    graph = build_plan_execute_graph(model, _tools(calls), checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "fields"}}
    result = run(graph, "Remove the old report", mode, config=config)

    assert calls == [("find", "report"), ("remove", "report-old.txt")]
    assert result["executed_steps"][1]["args"] == {"name": "report-old.txt"}
    # the planner was shown what `find` returns, so it could name the field up front
    assert "- find(pattern): Find files whose name holds `pattern` → {matches: […], folder}" in (
        model.requests_of("planner")[0].prompt
    )


@both_modes
def test_a_path_that_names_nothing_fails_without_a_call(mode: Mode) -> None:
    calls: list[tuple[str, str]] = []
    find = {"tool": "find", "args": {"pattern": "report"}}
    wrong = {"tool": "remove", "args": {"name": "$1.files[0]"}}
    model = FakeChatModel(
        planner=[call("plan", steps=[find, wrong])],
        replanner=[
            call("respond", response="could not remove it"),
            call("plan", steps=[wrong]),  # asked after the failed call: the same, so it stands
        ],
    )
    graph = build_plan_execute_graph(model, _tools(calls), checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "no-field"}}
    result = run(graph, "Remove the old report", mode, config=config)

    assert calls == [("find", "report")]
    refused = result["executed_steps"][1]
    expected = (
        'Not run: "$1.files[0]" names nothing: $1 is a JSON object with the fields matches, folder.'
    )
    assert (refused["status"], refused["result"]) == ("failed", expected)
    assert expected in model.requests_of("replanner")[0].prompt
