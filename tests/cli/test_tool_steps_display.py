"""Tool steps as people see them: progress lines, `show` and `--json` show the call and its
result (`Step 2: price(item="A") → 4.20`), calls taken from an earlier step, and the option
`--tool-steps` stored with a run's settings."""

from __future__ import annotations

import io
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from replan.cli.display import PlainDisplay
from replan.cli.parser import build_parser
from replan.cli.progress import ProgressPrinter
from replan.cli.summary import describe_run, summarize
from replan.graphs.context import Context
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.tools.effects import declare_effects
from tests.support.fake_models import FakeChatModel, call

CONFIG: RunnableConfig = {"configurable": {"thread_id": "shown"}}


@tool
def price(item: str) -> str:
    """The price of an item, in EUR."""
    return {"A": "4.20", "B": "1.50"}[item]


declare_effects(price, read_only=True)  # a look-up: its result may be reused


def _run_with_progress() -> tuple[Any, str]:
    """A run whose first wave looks up A and B, and whose replan looks A up again; its graph
    and the progress lines it printed."""
    steps = [{"tool": "price", "args": {"item": item}} for item in "AB"]
    model = FakeChatModel(
        planner=[call("plan", steps=steps)],
        replanner=[
            call("plan", steps=[{"tool": "price", "args": {"item": "A"}}]),
            call("respond", response="A: 4.20, B: 1.50"),
        ],
    )
    graph = build_plan_execute_graph(model, [price], checkpointer=InMemorySaver())
    out = io.StringIO()
    printer = ProgressPrinter(PlainDisplay(out))
    for namespace, mode, chunk in graph.stream(
        {"messages": [("user", "Prices of A and B")]},
        CONFIG,
        stream_mode=["updates", "tasks", "custom"],
        subgraphs=True,
    ):
        printer.handle(namespace, mode, chunk)
    return graph, out.getvalue()


def test_progress_shows_each_tool_step_as_its_call_and_result() -> None:
    _, shown = _run_with_progress()
    lines = shown.splitlines()
    assert 'Step 1: price(item="A") → 4.20' in lines
    assert 'Step 2: price(item="B") → 1.50' in lines
    assert 'Step 3: price(item="A") → 4.20 (same call as step 1: not made again)' in lines
    assert not any(line.startswith("Step") and "done in" in line for line in lines)


def test_show_and_json_show_tool_steps_and_reused_calls() -> None:
    graph, _ = _run_with_progress()
    snapshot = graph.get_state(CONFIG)

    report = describe_run("shown", snapshot)
    assert '1. price(item="A") → 4.20' in report
    assert '3. price(item="A") → 4.20' in report
    assert "Tool calls not made again (an earlier step's result reused): 1" in report

    document = summarize("shown", snapshot)
    assert document["reused_calls"] == 1
    first, _, again = document["executed_steps"]
    assert first == {
        "id": 1,
        "step": 'price(item="A")',
        "result": "4.20",
        "status": "done",
        "tool": "price",
        "args": {"item": "A"},
        "read_only": True,
        "after": 0,
    }
    assert again["reused_from"] == 1


def test_the_tool_steps_option_is_a_run_setting() -> None:
    parser = build_parser()
    args = parser.parse_args(["run", "Objective", "--tool-steps", "off"])
    assert args.tool_steps == "off"
    assert parser.parse_args(["run", "Objective"]).tool_steps is None  # the run's own, or auto
    assert Context().tool_steps == "auto"
    assert Context(tool_steps="off").settings()["tool_steps"] == "off"
