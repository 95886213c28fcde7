"""Lean prompts that a server's prompt cache can reuse: short fixed texts, and one head (the
same system text and tool list) first in every request of a run."""

from __future__ import annotations

import re

import pytest

from replan.graphs.context import Context
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.graphs.prompts import DEFAULT_PROMPTS as P
from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.fake_models import run


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
