"""docs/graph.md's examples run as written: the graph with a tool (against a fake model) and
the graph as a node of a user's graph (against the scripted server)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from replan.graphs.context import Context
from replan.graphs.model import client as model_factory
from replan.testing import Reply, ScriptedOpenAIServer, tool_call
from replan.testing import plan_script as script
from replan.testing import text as said
from replan.testing.requests import tool_names
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


ANNOUNCE = script.step_text(2, 2, "now announce it in 2")


def test_a_conversation_on_a_thread_runs_as_written(
    model: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    (code,) = python_blocks("Conversations", GRAPH)
    exec(compile(code, f"{GRAPH}:conversation", "exec", dont_inherit=True), {"__name__": "chat"})

    kinds, last, first = capsys.readouterr().out.splitlines()
    assert kinds == str(["human", "ai", "human", "ai"])
    assert last.startswith("All 2 steps of [now announce it in 2] are done")
    assert first == "Ship the 2.0 release -> 3 steps"


def test_the_graph_as_a_tool_of_create_agent_answers_its_task(
    model: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    def assistant_or_replan(request: dict[str, Any]) -> Reply:
        names = tool_names(request)
        if "plan_and_execute" not in names:
            return script.respond(request)  # replan's own requests
        result = next((m for m in request["messages"] if m["role"] == "tool"), None)
        if result is None:
            return tool_call("plan_and_execute", {"task": "Ship the 2.0 release"})
        return said(f"Done: {result['content']}")

    model.responder = assistant_or_replan
    (code,) = python_blocks("Inside other agents", GRAPH)[:1]
    exec(compile(code, f"{GRAPH}:subagent", "exec", dont_inherit=True), {"__name__": "subagent"})

    assert capsys.readouterr().out.strip() == f"Done: {ANSWER}"
    replans = [r for r in model.requests if "plan_and_execute" not in tool_names(r)]
    assert script.executor_steps(replans) == [1, 2, 3]


def test_the_graph_as_a_node_of_a_chat_graph_adds_only_its_answers(
    model: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code = python_blocks("Inside other agents", GRAPH)[1]
    exec(compile(code, f"{GRAPH}:node", "exec", dont_inherit=True), {"__name__": "parent"})

    assert capsys.readouterr().out.strip() == "['messages'] ['human', 'ai', 'human', 'ai']"
    planners = [r for r in model.requests if script.classify(r).role == "planner"]
    said = [m["content"] for m in planners[1]["messages"][1:]]
    assert said[0] == "Ship the 2.0 release" and said[1].startswith(ANSWER)  # its answer
    assert said[2].startswith("Now announce it in 2 steps\n\n")  # then what it is asked
    # the graph kept its first turn (checkpointer=True): the second planner is shown the results
    # behind the first answer, by number, and numbers its steps on from them
    assert said[1].endswith("Number the steps of the next plan from 4.")
