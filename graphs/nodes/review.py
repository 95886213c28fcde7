"""Human review of a new plan: the `review_plan` node, the answers it accepts, and the shape of
its pause.

The node pauses the run with `interrupt(value)`, `value` in the shape of LangChain's
human-in-the-loop middleware (`HITLRequest`), which chat UIs such as Agent Chat UI render as
approve / edit / reject: one action request named `plan` whose `args` hold the `steps`, written
as a model writes a first plan (a string for a step that runs after the one before it, else
`{"step": ..., "depends_on": [numbers]}`, and a tool step as `{"tool": ..., "args": {...},
"depends_on": [...]}` with `"$N"` naming the result of step N; steps are numbered by position
1, 2, ..., or, in a follow-up turn that may name the turn before's steps, on from those), and
a `description` asking the question (and saying what was wrong with the last answer).

Resume it with the middleware's decisions, `{"decisions": [{"type": "approve"} | {"type":
"edit", "edited_action": {"name": "plan", "args": {"steps": [...]}}} | {"type": "reject",
"message": str}]}` (edited steps may also come as the JSON text of the list, as chat UIs send
them), or as before: "approve" / `{"action": "approve"}`, a list of steps / `{"action":
"edit", "steps": [...]}`, or "reject" / `{"action": "reject", "reason": str}`. Any other answer,
an edit with no steps or with steps that do not parse, pauses again saying why.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.runtime import get_runtime
from langgraph.types import Command, interrupt
from pydantic import ValidationError

from replan.graphs.context import Context, run_context
from replan.graphs.graph_state import REPLY, PlanExecuteState, review_request
from replan.graphs.plan.decisions import PlanArgs, accept_plan
from replan.graphs.plan.numbering import Numbering
from replan.graphs.plan.own_tools import NO_TOOLS, OwnTools
from replan.graphs.plan.scheduling import wave
from replan.graphs.plan.views import format_plan, plan_items
from replan.graphs.prompts import Prompts


@dataclass(frozen=True)
class PlanReview:
    """A reviewer's answer to a proposed plan; `steps` is set for an edit."""

    action: Literal["approve", "edit", "reject"]
    steps: PlanArgs | None = None
    reason: str = ""


REVIEW_ANSWERS = (
    'Answer "approve", "reject" (or {"action": "reject", "reason": "..."}), or the edited plan: '
    'a list of steps (or {"action": "edit", "steps": [...]}), each a text or {"step": "...", '
    '"depends_on": [positions of earlier steps]}; or with decisions as chat UIs send them.'
)
"""(A run with tool steps also takes `{"tool", "args", "depends_on"}` items; see the module.)"""


def _from_decisions(answer: dict[str, Any]) -> Any:
    """A middleware-shaped answer (`{"decisions": [...]}`) as replan's own."""
    decisions = answer.get("decisions")
    if not isinstance(decisions, list) or len(decisions) != 1 or not isinstance(decisions[0], dict):
        return answer  # not understood: said so below
    decision = decisions[0]
    kind = decision.get("type")
    if kind == "edit":
        edited = decision.get("edited_action") or {}
        steps = (edited.get("args") or {}).get("steps") if isinstance(edited, dict) else None
        if isinstance(steps, str):  # a chat UI's text box holds the list as JSON text
            try:
                steps = json.loads(steps)
            except ValueError:
                steps = [steps]  # one step's text, checked as any other
        return {"action": "edit", "steps": steps}
    if kind == "reject":
        return {"action": "reject", "reason": decision.get("message") or ""}
    return {"action": kind}


ANSWER_PREVIEW_CHARS = 80
STEP_OBJECT = '{"step", "depends_on"}'


def _preview(answer: Any) -> str:
    """The answer as the reviewer sent it, cut short."""
    try:
        shown = json.dumps(answer, ensure_ascii=False)
    except (TypeError, ValueError):
        shown = repr(answer)
    return shown if len(shown) <= ANSWER_PREVIEW_CHARS else shown[: ANSWER_PREVIEW_CHARS - 1] + "…"


def _edit_problems(error: ValidationError) -> str:
    """What is wrong with an edited plan, in words (not pydantic's)."""
    problems = []
    for item in error.errors():
        where = [part for part in item["loc"] if part != "steps"]
        if item["type"] == "too_short" and not where:
            problems.append("it has no steps")
        elif item["type"] == "value_error":
            problems.append(str(item.get("ctx", {}).get("error", item["msg"])))
        elif where and isinstance(where[0], int):
            problems.append(
                f'step {where[0] + 1} is not a text or a {{"step", "depends_on"}} object'
            )
        else:
            problems.append("it is not a list of steps")
    return "; ".join(dict.fromkeys(problems))


def parse_plan_review(answer: Any, numbering: Numbering | None = None) -> PlanReview:
    """Read a resume value for the plan review, an edited plan numbered as `numbering` says
    (default: a first plan without tool steps); raise ValueError saying, for people, what was
    wrong and what is accepted."""
    sent = answer
    if isinstance(answer, dict) and "decisions" in answer:
        answer = _from_decisions(answer)
    if isinstance(answer, str):
        answer = {"action": answer.strip().lower()}
    elif isinstance(answer, list):
        answer = {"action": "edit", "steps": answer}
    action = answer.get("action") if isinstance(answer, dict) else None
    if action == "approve":
        return PlanReview("approve")
    if action == "reject":
        return PlanReview("reject", reason=str(answer.get("reason") or ""))
    if action == "edit":
        try:
            steps = PlanArgs.model_validate(
                {"steps": answer.get("steps")}, context=numbering or Numbering.first_plan()
            )
        except ValidationError as exc:
            raise ValueError(
                f"The edited plan {_preview(answer.get('steps'))} cannot be used: "
                f"{_edit_problems(exc)}. {REVIEW_ANSWERS}"
            ) from None
        return PlanReview("edit", steps=steps)
    raise ValueError(f"The answer {_preview(sent)} is not understood. {REVIEW_ANSWERS}")


class PlanReviewNode:
    """The `review_plan` node: pause for a human to approve, edit or reject the plan; `tools`
    gives the tools an edited plan's tool steps may call in a run (none: no tool steps)."""

    def __init__(
        self, prompts: Prompts, tools: Callable[[Context], OwnTools] = lambda _: NO_TOOLS
    ) -> None:
        self.prompts = prompts
        self.tools = tools

    def __call__(self, state: PlanExecuteState) -> Command[Literal["executor", "reply"]]:
        """An answer that is none of those pauses again, its description saying what was
        wrong and what is accepted, so a typo never strands the run. An approved (or edited)
        plan starts its first wave of steps; a rejected one ends the turn."""
        plan = state["plan"]
        context = run_context(get_runtime(Context).context, state.get("settings"))
        numbering = Numbering.replan((), state.get("carried_steps", []), self.tools(context))
        items = plan_items(plan, numbering.first)
        question = self.prompts.review_question.format(plan=format_plan(plan))
        description = question
        while True:
            try:
                review = parse_plan_review(interrupt(review_request(items, description)), numbering)
                break
            except ValueError as exc:
                description = f"{exc}\n\n{question}"
        if review.action == "reject":
            reason = f" Reason: {review.reason}" if review.reason else ""
            response = self.prompts.rejected.format(reason=reason)
            return Command(goto=REPLY, update={"response": response, "stop_reason": "rejected"})
        if review.steps is None:
            return Command(goto=wave(state, context))
        edited = accept_plan(review.steps, numbering)
        return Command(goto=wave({**state, "plan": edited}, context), update={"plan": edited})
