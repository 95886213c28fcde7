"""`corrected_mistakes`: the model's mistaken replies that were corrected and asked again,
counted in the graph state, through the real ChatOpenAI client against the scripted server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from replan.graphs.context import Context, DecisionMode
from replan.graphs.model.decision_modes.asking import Decision
from replan.graphs.plan.decisions import RespondArgs
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.testing import Quirks, Reply, ScriptedOpenAIServer, text, tool_call, tool_calls
from replan.testing import plan_script as script
from tests.support.fake_models import Mode, both_modes, run
from tests.support.mistaken_replies import as_if_right, mistaken, told

BROKEN_ARGS = '{"subject": "Write it", '
UNKNOWN_CALL = json.dumps({"name": "Nope", "arguments": {"x": 1}})


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")


def _counted(
    server: ScriptedOpenAIServer,
    objective: str,
    mode: Mode = "async",
    **overrides: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The output and the final state of one run."""
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    context = Context(model="scripted-model", base_url=server.base_url, **overrides)
    result = run(graph, objective, mode, config=config, context=context)
    return result, graph.get_state(config).values


@both_modes
@pytest.mark.parametrize("decision_mode", ["tool_required", "json_schema"])
def test_a_decision_reply_without_a_decision_is_counted_once_corrected(
    server: ScriptedOpenAIServer, mode: Mode, decision_mode: DecisionMode
) -> None:
    server.responder = mistaken({"planner": text("First I will think about the steps.")})
    result, values = _counted(server, "Ship it in 1 steps", mode, decision_mode=decision_mode)

    assert result["response"].startswith("All 1 steps")
    planner = [r for r in server.requests if script.classify(r).role == "planner"]
    assert len(planner) == 2 and told(planner[1]) == 1
    assert values["corrected_mistakes"] == 1
    assert "corrected_mistakes" not in result  # in the state, not in the output


def test_a_clean_run_counts_no_mistake(server: ScriptedOpenAIServer) -> None:
    result, values = _counted(server, "Ship it in 2 steps")
    assert result["response"].startswith("All 2 steps")
    assert values["corrected_mistakes"] == 0


def test_every_mistaken_decision_reply_counts(server: ScriptedOpenAIServer) -> None:
    """Two mistakes before the replanner's decision, one before the planner's."""

    def respond(request: dict[str, Any]) -> Reply:
        role, corrections = script.classify(request).role, told(request)
        if role == "replanner" and corrections < 2:
            return [text("Nearly done."), tool_call("respond", {"answer": "x"})][corrections]
        if role == "planner" and not corrections:
            return tool_call("plan", {"steps": "all at once"})
        return script.respond(request if role == "executor" else as_if_right(request))

    server.responder = respond
    result, values = _counted(server, "Ship it in 1 steps")
    assert result["response"].startswith("All 1 steps")
    assert values["corrected_mistakes"] == 3


def test_a_decision_counts_its_corrected_replies_in_its_update() -> None:
    args = RespondArgs(response="done")
    assert Decision(args).update() == {}
    assert Decision(args, mistakes=2).update() == {"corrected_mistakes": 2}
    assert Decision(args, recovered_calls=1, mistakes=1).update() == {
        "recovered_calls": 1,
        "corrected_mistakes": 1,
    }


@both_modes
def test_an_executor_reply_with_invalid_json_arguments_counts_once(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    broken = tool_calls([("TaskCreate", BROKEN_ARGS), ("TaskList", '{"')])  # one reply, 2 calls
    server.responder = mistaken({"executor": broken})
    result, values = _counted(server, "Ship it in 1 steps", mode)

    assert [s["status"] for s in result["executed_steps"]] == ["done"]
    step = [r for r in server.requests if script.classify(r) == script.Call("executor", 1)]
    errors = [m for m in step[1]["messages"] if m.get("role") == "tool"]
    assert len(errors) == 2 and all("not valid JSON" in m["content"] for m in errors)
    assert values["corrected_mistakes"] == 1


def test_a_correction_the_step_ends_on_is_not_counted(server: ScriptedOpenAIServer) -> None:
    server.responder = mistaken({"executor": tool_call("TaskCreate", BROKEN_ARGS)})
    result, values = _counted(server, "Ship it in 1 steps", executor_max_steps=1, max_iterations=1)
    assert [s["status"] for s in result["executed_steps"]] == ["unfinished"]
    assert values["corrected_mistakes"] == 0  # the model was never asked again


def test_an_unreadable_call_written_as_text_counts(server: ScriptedOpenAIServer) -> None:
    server.responder = mistaken({"executor": text(f"```json\n{UNKNOWN_CALL}\n```")})
    result, values = _counted(server, "Ship it in 1 steps")
    assert [s["status"] for s in result["executed_steps"]] == ["done"]
    assert values["corrected_mistakes"] == 1


def test_a_call_to_an_unknown_tool_is_not_a_corrected_mistake(
    server: ScriptedOpenAIServer,
) -> None:
    server.responder = mistaken({"executor": tool_call("Nope", {"x": 1})})
    result, values = _counted(server, "Ship it in 1 steps")
    assert [s["status"] for s in result["executed_steps"]] == ["done"]
    assert values["corrected_mistakes"] == 0  # the tool's error reply, not a correction


@both_modes
def test_parallel_branches_and_decisions_add_up(server: ScriptedOpenAIServer, mode: Mode) -> None:
    server.responder = mistaken(
        {"planner": text("Let me see."), "executor": tool_call("TaskCreate", BROKEN_ARGS)}
    )
    result, values = _counted(server, "Ship it in 3 parallel steps", mode)

    assert [s["status"] for s in result["executed_steps"]] == ["done"] * 3
    assert values["corrected_mistakes"] == 1 + 3  # the planner's, one per branch


def test_recovered_calls_and_mistakes_are_counted_apart() -> None:
    """A call written as text is recovered (not a mistake); a broken one is a mistake."""
    broken = tool_call("TaskCreate", BROKEN_ARGS)
    with ScriptedOpenAIServer(
        mistaken({"executor": broken}), quirks=Quirks(calls_as_text="tagged")
    ) as server:
        result, values = _counted(server, "Ship it in 1 steps")
    assert [s["status"] for s in result["executed_steps"]] == ["done"]
    assert values["recovered_calls"] == 1  # the planner's `plan` (then decisions come as JSON)
    assert values["corrected_mistakes"] == 1  # the broken call, written as text as unreadable
