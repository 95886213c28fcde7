"""docs/graph.md's examples run as written: the graph with a tool (against a fake model) and
the graph as a node of a user's graph (against the scripted server)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from replan.graphs.context import Context
from replan.graphs.model import client as model_factory
from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.fake_models import FakeChatModel, call, plan, respond, text
from tests.support.readme import doc, python_blocks

GRAPH = doc("graph.md")


def test_the_graph_with_a_tool_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeChatModel(
        planner=[plan("Count the words of the phrase")],
        executor=[call("word_count", text="to be or not to be"), text("The phrase has 6 words.")],
        replanner=[respond("There are 6 words.")],
    )
    built_for: list[Context] = []

    def fake_factory(context: Context, max_tokens: int) -> FakeChatModel:
        built_for.append(context)
        return fake

    monkeypatch.setattr(model_factory, "chat_model_from_context", fake_factory)
    (code,) = python_blocks("Running the graph", GRAPH)
    exec(compile(code, f"{GRAPH}:plan-execute", "exec"), {"__name__": "readme_example"})

    printed = capsys.readouterr().out
    assert printed.splitlines() == [
        "There are 6 words.",
        "- Count the words of the phrase => The phrase has 6 words.",
    ]
    assert {c.model for c in built_for} == {"gpt-4o-mini"}
    assert "6" in fake.requests_of("executor")[1].prompt  # the tool really ran


PLAN = [script.step_text(i, 3, "ship the 2 0 release") for i in (1, 2, 3)]
ANSWER = "All 3 steps of [ship the 2 0 release] are done: RESULT 1/3, RESULT 2/3, RESULT 3/3"


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    """The scripted plan–execute model, reached by a plain ChatOpenAI through the environment."""
    with ScriptedOpenAIServer(script.respond) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


def test_the_graph_runs_as_a_subgraph_pausing_for_approval(
    model: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    (code,) = python_blocks("Embedding in your own graph", GRAPH)
    namespace: dict[str, Any] = {"__name__": "readme_embedding"}
    exec(compile(code, f"{GRAPH}:embedding", "exec", dont_inherit=True), namespace)

    assert capsys.readouterr().out.splitlines() == [str(PLAN), f"Announced: {ANSWER}"]
    assert script.executor_steps(model.requests) == [1, 2, 3]
    roles = [script.classify(request).role for request in model.requests]
    assert roles.count("planner") == 1  # the resume ran the approved plan, no new one
    final = namespace["app"].get_state(namespace["config"])
    assert final.next == () and final.values["response"] == ANSWER
