"""The README's embedding example: the plan–execute graph as a node of a user's graph."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.readme import README, python_blocks

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
    (code,) = python_blocks("Embedding in your own graph")
    namespace: dict[str, Any] = {"__name__": "readme_embedding"}
    exec(compile(code, f"{README}:embedding", "exec", dont_inherit=True), namespace)

    assert capsys.readouterr().out.splitlines() == [str(PLAN), f"Announced: {ANSWER}"]
    assert script.executor_steps(model.requests) == [1, 2, 3]
    roles = [script.classify(request).role for request in model.requests]
    assert roles.count("planner") == 1  # the resume ran the approved plan, no new one
    final = namespace["app"].get_state(namespace["config"])
    assert final.next == () and final.values["response"] == ANSWER
