"""Human approval of the plan: approve, edit, reject, or a clear error for anything else."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from replan.graphs.context import Context
from replan.graphs.errors import InvalidInputError
from replan.graphs.plan_execute import build_plan_execute_graph
from tests.support.fake_models import FakeChatModel, Mode, both_modes, plan, respond, run, text

CONFIG: RunnableConfig = {"configurable": {"thread_id": "review"}}
APPROVE = Context(approve_plan=True)


def _paused(mode: Mode = "async") -> tuple[Any, FakeChatModel, dict[str, Any]]:
    """A graph paused at the review, its model, and what the pause showed."""
    model = FakeChatModel(
        planner=[plan("draft", "publish")],
        executor=[text("step done"), text("step done")],
        replanner=[respond("finished")],
    )
    graph = build_plan_execute_graph(model, checkpointer=InMemorySaver(), task_tools="compact")
    paused = run(graph, "Write a post", mode, config=CONFIG, context=APPROVE)
    (pending,) = paused["__interrupt__"]
    return graph, model, pending.value


def _resume(graph: Any, answer: Any, mode: Mode = "async") -> dict[str, Any]:
    return run(graph, Command(resume=answer), mode, config=CONFIG, context=APPROVE)


def _asked(shown: dict[str, Any]) -> tuple[list[Any], str]:
    """The steps and the description of a review pause (LangChain's HITLRequest shape)."""
    (request,) = shown["action_requests"]
    assert request["name"] == "plan"
    return request["args"]["steps"], request["description"]


def test_the_run_pauses_after_planning_and_shows_the_plan_as_chat_uis_render_it() -> None:
    graph, model, shown = _paused()
    steps, description = _asked(shown)
    assert steps == ["draft", "publish"] and "approve" in description.lower()
    assert shown["review_configs"] == [
        {"action_name": "plan", "allowed_decisions": ["approve", "edit", "reject"]}
    ]
    assert graph.get_state(CONFIG).next == ("review_plan",)
    assert model.requests_of("executor") == []


@both_modes
@pytest.mark.parametrize(
    "answer", ["approve", {"action": "approve"}, {"decisions": [{"type": "approve"}]}]
)
def test_approve_runs_the_plan_without_planning_again(answer: Any, mode: Mode) -> None:
    graph, model, _ = _paused(mode)
    result = _resume(graph, answer, mode)
    assert result["response"] == "finished"
    assert result["executed_steps"][0]["step"] == "draft"
    assert len(model.requests_of("planner")) == 1


def _edit_decision(steps: Any) -> dict[str, Any]:
    edited = {"name": "plan", "args": {"steps": steps}}
    return {"decisions": [{"type": "edit", "edited_action": edited}]}


@pytest.mark.parametrize(
    "answer",
    [
        ["outline", "edit"],
        {"action": "edit", "steps": ["outline", "edit"]},
        _edit_decision(["outline", "edit"]),
        _edit_decision('["outline", "edit"]'),  # as a chat UI's text box sends it
    ],
)
def test_edit_runs_the_edited_plan(answer: Any) -> None:
    graph, model, _ = _paused()
    result = _resume(graph, answer)
    assert result["executed_steps"][0]["step"] == "outline"
    assert model.requests_of("executor")[0].prompt.endswith("# Your step\noutline")


@both_modes
@pytest.mark.parametrize(
    "answer",
    [
        {"action": "reject", "reason": "too vague"},
        {"decisions": [{"type": "reject", "message": "too vague"}]},
    ],
)
def test_reject_ends_the_turn_with_an_answer_saying_so(answer: Any, mode: Mode) -> None:
    graph, model, _ = _paused(mode)
    result = _resume(graph, answer, mode)
    assert "rejected" in result["response"] and "too vague" in result["response"]
    assert result["stop_reason"] == "rejected"
    assert result["messages"][-1].text == result["response"]
    assert model.requests_of("executor") == []
    assert graph.get_state(CONFIG).next == ()


ACCEPTED = (
    'Answer "approve", "reject" (or {"action": "reject", "reason": "..."}), or the edited plan: '
    'a list of steps (or {"action": "edit", "steps": [...]}), each a text or {"step": "...", '
    '"depends_on": [positions of earlier steps]}; or with decisions as chat UIs send them.'
)


@both_modes
@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("maybe", f'The answer "maybe" is not understood. {ACCEPTED}'),
        ({"action": "maybe"}, f'The answer {{"action": "maybe"}} is not understood. {ACCEPTED}'),
        (42, f"The answer 42 is not understood. {ACCEPTED}"),
        (
            {"action": "edit", "steps": []},
            f"The edited plan [] cannot be used: it has no steps. {ACCEPTED}",
        ),
        (
            ["draft", " "],
            f'The edited plan ["draft", " "] cannot be used: step 2 is blank. {ACCEPTED}',
        ),
        (
            [{"step": "draft", "depends_on": [2]}, "publish"],
            'The edited plan [{"step": "draft", "depends_on": [2]}, "publish"] cannot be used: '
            "step 1 depends on step 2, which comes after it (a step may only depend on steps "
            f"listed before it). {ACCEPTED}",
        ),
        (
            ["draft", 7],
            f'The edited plan ["draft", 7] cannot be used: step 2 is not a text or a '
            f'{{"step", "depends_on"}} object. {ACCEPTED}',
        ),
        (
            _edit_decision([]),
            f"The edited plan [] cannot be used: it has no steps. {ACCEPTED}",
        ),
        (
            ['{"step": broken'],
            'The edited plan ["{\\"step\\": broken"] cannot be used: step 1 looks like a JSON '
            f"object but is not valid JSON. {ACCEPTED}",
        ),
    ],
)
def test_an_unknown_answer_pauses_again_with_an_error_for_people(
    answer: Any, error: str, mode: Mode
) -> None:
    graph, model, _ = _paused(mode)
    again = _resume(graph, answer, mode)

    (pending,) = again["__interrupt__"]
    steps, description = _asked(pending.value)
    assert description.startswith(error + "\n\n")
    assert steps == ["draft", "publish"]
    assert model.requests_of("executor") == []
    assert _resume(graph, "approve", mode)["response"] == "finished"


def test_without_approve_plan_there_is_no_pause() -> None:
    model = FakeChatModel(planner=[plan("s")], executor=[text("r")], replanner=[respond("ok")])
    graph = build_plan_execute_graph(model, checkpointer=InMemorySaver(), task_tools="compact")
    assert run(graph, "Go", config=CONFIG, context=Context())["response"] == "ok"


@both_modes
def test_approval_on_a_graph_without_a_checkpointer_is_refused_before_any_model_call(
    mode: Mode,
) -> None:
    """Such a pause could never be answered: LangGraph would only say so at the resume."""
    model = FakeChatModel(planner=[plan("Ship")], executor=[text("shipped")],
                          replanner=[respond("Shipped.")])  # fmt: skip
    graph = build_plan_execute_graph(model, task_tools="compact")  # no checkpointer

    with pytest.raises(InvalidInputError, match="approve_plan pauses the run"):
        run(graph, "Ship it", mode, context=Context(approve_plan=True))
    assert model.requests == []
    assert run(graph, "Ship it", mode, context=Context())["response"] == "Shipped."
