"""Human review of a new plan: the `review_plan` node and the answers it accepts.

The node pauses the run with `interrupt({"plan": [...], "question": str})`. Resume it with
"approve" / `{"action": "approve"}`, a list of steps / `{"action": "edit", "steps": [...]}`, or
"reject" / `{"action": "reject", "reason": str}`; any other answer pauses again with an `error`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from langgraph.types import Command, interrupt
from pydantic import ValidationError

from replan.graphs.planner import PlanArgs
from replan.graphs.prompts import Prompts
from replan.graphs.state import PlanExecuteState, format_plan


@dataclass(frozen=True)
class PlanReview:
    """A reviewer's answer to a proposed plan."""

    action: Literal["approve", "edit", "reject"]
    steps: tuple[str, ...] = ()
    reason: str = ""


REVIEW_ANSWERS = (
    '"approve", "reject", a list of steps, {"action": "approve"}, '
    '{"action": "edit", "steps": [...]}, or {"action": "reject", "reason": "..."}'
)


def parse_plan_review(answer: Any) -> PlanReview:
    """Read a resume value for the plan review; raise ValueError naming what is accepted."""
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
            steps = PlanArgs(steps=answer.get("steps")).steps
        except ValidationError as exc:
            raise ValueError(f"an edited plan needs a non-empty list of steps: {exc}") from exc
        return PlanReview("edit", steps=tuple(steps))
    raise ValueError(f"plan review answer {answer!r} is not understood; send {REVIEW_ANSWERS}")


class PlanReviewNode:
    """The `review_plan` node: pause for a human to approve, edit or reject the plan."""

    def __init__(self, prompts: Prompts) -> None:
        self.prompts = prompts

    def __call__(self, state: PlanExecuteState) -> Command[Literal["executor", "__end__"]]:
        """An answer that is none of those pauses again, with an `error` saying what is
        accepted, so a typo never strands the run."""
        plan = state["plan"]
        question = self.prompts.review_question.format(plan=format_plan(plan))
        shown: dict[str, Any] = {"plan": plan, "question": question}
        while True:
            try:
                review = parse_plan_review(interrupt(shown))
                break
            except ValueError as exc:
                shown = {**shown, "error": str(exc)}
        if review.action == "reject":
            reason = f" Reason: {review.reason}" if review.reason else ""
            return Command(
                goto="__end__", update={"response": self.prompts.rejected.format(reason=reason)}
            )
        if review.action == "edit":
            return Command(goto="executor", update={"plan": list(review.steps)})
        return Command(goto="executor")
