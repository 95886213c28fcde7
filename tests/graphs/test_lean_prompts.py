"""Lean prompts that a server's prompt cache can reuse: short fixed texts, and one head (the
same system text and tool list) first in every request of a run."""

from __future__ import annotations

import os
import re

import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from replan.graphs.context import Context
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.graphs.prompts import DEFAULT_PROMPTS as P
from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.fake_models import FakeChatModel, call, run


def _words(*texts: str) -> int:
    """Words of fixed text (placeholders left out)."""
    return sum(len(re.sub(r"\{[a-z_]+\}", " ", text).split()) for text in texts)


@pytest.mark.parametrize(
    ("texts", "most"),
    [
        ((P.head, P.planner, P.planner_computing), 120),
        ((P.head, P.planner_tool_steps, P.planner_computing), 120),
        ((P.head, P.replanner, P.respond_with_answer, P.replanner_task), 120),
        (
            (P.head, P.replanner_tool_steps, P.respond_with_answer, P.replanner_computing),
            120 - _words(P.replanner_task),
        ),
        ((P.head, P.executor, P.executor_computing, P.executor_task_tools, P.executor_task), 80),
    ],
)
def test_each_nodes_fixed_text_stays_short(texts: tuple[str, ...], most: int) -> None:
    """Every fixed word of a node's request: the head, its instructions, their notes and the
    headings of its briefing."""
    assert _words(*texts) <= most


@pytest.mark.parametrize("decision_mode", ["tool_required", "json_schema"])
def test_every_request_of_a_run_starts_with_the_same_head(
    server: ScriptedOpenAIServer, decision_mode: str
) -> None:
    context = Context(
        model="scripted-model",
        base_url=server.base_url,
        answer="plain",
        decision_mode=decision_mode,  # type: ignore[arg-type]
    )
    run(build_plan_execute_graph(task_tools="compact"), "Ship it in 2 steps", context=context)

    roles = {script.classify(r).role for r in server.requests}
    assert roles == {"planner", "executor", "replanner", "answer"}
    heads = {r["messages"][0]["content"] for r in server.requests}
    assert len(heads) == 1 and all(r["messages"][0]["role"] == "system" for r in server.requests)
    (head,) = heads
    assert head == P.head.format(tools="(none)")  # the run has no tools of its own


def test_a_replan_starts_as_the_one_before_it_through_the_steps_that_one_saw_done() -> None:
    """The briefing lists the steps done (which only grow within a turn) before the steps still
    planned (which change at every wave): a replan's prompt starts as the one before it did,
    through every result that one was shown, so a server's prompt cache reads them once."""
    model = FakeChatModel(
        planner=[call("plan", steps=["Step A", "Step B", "Step C"])],
        executor=[AIMessage("Result of A"), AIMessage("Result of B"), AIMessage("Result of C")],
        replanner=[
            call("plan", steps=["Step B", "Step C"]),
            call("plan", steps=["Step C"]),
            call("respond", response="A, B and C are done."),
        ],
    )
    graph = build_plan_execute_graph(model, checkpointer=InMemorySaver(), task_tools="compact")
    run(graph, "Do A, B and C", config={"configurable": {"thread_id": "t"}})

    first, second, third = (request.prompt for request in model.requests_of("replanner"))
    assert "Result of A" in os.path.commonprefix([first, second])
    assert "Result of B" in os.path.commonprefix([second, third])
