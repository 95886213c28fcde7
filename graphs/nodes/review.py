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

One step can also be changed, keeping the others: `{"action": "edit", "step": N, "text": str}`
gives step N (its place in the list under review, from 1) a new text, waiting for the same
steps (a text that is a JSON step object replaces the step whole), and `{"action": "drop",
"step": N}` leaves it out, the steps that waited for it then waiting for what it waited for.
The review then pauses again with the changed plan (`StepChange`); approving it runs that plan.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.runtime import get_runtime
from langgraph.types import Command
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from replan.graphs.context import Context, run_context
from replan.graphs.graph_state import (
    REPLY,
    REVIEW,
    PlanExecuteState,
    PlanItem,
    PlannedStep,
    review_request,
)
from replan.graphs.plan.decisions import PlanArgs, accept_plan
from replan.graphs.plan.numbering import Numbering
from replan.graphs.plan.own_tools import NO_TOOLS, OwnTools
from replan.graphs.plan.references import references
from replan.graphs.plan.scheduling import running_todos, wave
from replan.graphs.plan.views import format_plan, plan_items
from replan.graphs.plan_stream import paused, plan_view, publish
from replan.graphs.prompts import Prompts
from replan.graphs.seal import declared


@dataclass(frozen=True)
class StepChange:
    """A change to one step of the plan under review, after which the review asks again: step
    `position` (its place in the list, from 1) gets the new `text`, or is dropped (None)."""

    position: int
    text: str | None = None

    def answer(self) -> dict[str, Any]:
        """The resume value asking for this change."""
        if self.text is None:
            return {"action": "drop", "step": self.position}
        return {"action": "edit", "step": self.position, "text": self.text}

    def problem(self, count: int) -> str:
        """What stops this change to a plan of `count` steps, in words ("" when nothing does)."""
        if not 1 <= self.position <= count:
            return f"there is no step {self.position} (the plan has steps 1 to {count})"
        if self.text is None and count == 1:
            return "step 1 is the plan's only step (reject the plan instead)"
        return ""


@dataclass(frozen=True)
class PlanReview:
    """A reviewer's answer to a proposed plan; `steps` is set for an edit, `change` for a
    change to one step."""

    action: Literal["approve", "edit", "reject", "change"]
    steps: PlanArgs | None = None
    reason: str = ""
    change: StepChange | None = None


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


def _preview(answer: Any) -> str:
    """The answer as the reviewer sent it, cut short."""
    try:
        shown = json.dumps(answer, ensure_ascii=False)
    except (TypeError, ValueError):
        shown = repr(answer)
    return shown if len(shown) <= ANSWER_PREVIEW_CHARS else shown[: ANSWER_PREVIEW_CHARS - 1] + "…"


def _in_words(errors: list[ErrorDetails]) -> str:
    """What pydantic's `errors` of an edited plan say is wrong with it, in words."""
    problems = []
    for item in errors:
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


def edit_problems(steps: Any) -> str:
    """What makes `steps` unusable as an edited plan in any run, in words ("" when nothing
    does): not a list of steps, a step neither a text nor a step object, a JSON object that
    does not parse. Whether the numbers its steps name fit is the review's to say: it knows
    how the run numbers them (a follow-up turn's steps are numbered on from the turn before's)."""
    try:
        PlanArgs.model_validate({"steps": steps})
    except ValidationError as exc:  # the steps' own errors; the plan's (its numbers) have no loc
        return _in_words([error for error in exc.errors() if error["loc"]])
    return ""


def _checked_steps(steps: Any, numbering: Numbering | None) -> PlanArgs:
    """`steps` as an edited plan numbered as `numbering` says (default: a first plan without
    tool steps); ValueError saying what is wrong with them."""
    try:
        return PlanArgs.model_validate(
            {"steps": steps}, context=numbering or Numbering.first_plan()
        )
    except ValidationError as exc:
        raise ValueError(_in_words(exc.errors())) from None


def _step_change(answer: dict[str, Any]) -> StepChange | None:
    """The change to one step `answer` asks for, if it asks for one."""
    position, text = answer.get("step"), answer.get("text")
    if not isinstance(position, int) or isinstance(position, bool) or "steps" in answer:
        return None
    if answer.get("action") == "drop" and text is None:
        return StepChange(position)
    if answer.get("action") == "edit" and isinstance(text, str):
        return StepChange(position, text)
    return None


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
    if isinstance(answer, dict) and (change := _step_change(answer)):
        return PlanReview("change", change=change)
    if action == "approve":
        return PlanReview("approve")
    if action == "reject":
        return PlanReview("reject", reason=str(answer.get("reason") or ""))
    if action == "edit":
        try:
            steps = _checked_steps(answer.get("steps"), numbering)
        except ValueError as exc:
            raise ValueError(
                f"The edited plan {_preview(answer.get('steps'))} cannot be used: {exc}. "
                f"{REVIEW_ANSWERS}"
            ) from None
        return PlanReview("edit", steps=steps)
    raise ValueError(f"The answer {_preview(sent)} is not understood. {REVIEW_ANSWERS}")


def _without(plan: list[PlannedStep], position: int) -> list[PlannedStep]:
    """`plan` without its step at `position`: the steps that waited for it wait for what it
    waited for. ValueError when a tool step uses its result."""
    gone = plan[position - 1]
    kept: list[PlannedStep] = []
    for number, step in enumerate(plan, 1):
        if step is gone:
            continue
        if gone["id"] in references(step.get("args") or {}):
            raise ValueError(
                f"step {number} uses the result of step {position} (change or drop step "
                f"{number} first)"
            )
        waits = set(step["depends_on"])
        if gone["id"] in waits:
            waits = waits - {gone["id"]} | set(gone["depends_on"])
        kept.append(step | {"depends_on": sorted(waits)})
    return kept


def _retexted(item: PlanItem, text: str) -> PlanItem:
    """`item` with the new `text`, waiting for the same steps; a text that is a JSON object
    replaces the item whole (a step object says what it waits for itself)."""
    if isinstance(item, str) or text.lstrip().startswith("{"):
        return text
    if "tool" not in item:
        return item | {"step": text}
    waits = {*(item.get("depends_on") or []), *references(item.get("args") or {})}
    return {"step": text, "depends_on": sorted(waits)}


def _changed_items(plan: list[PlannedStep], change: StepChange, first: int) -> list[PlanItem]:
    """The items of `plan`, numbered on from `first`, with `change` made; ValueError when it
    cannot be."""
    if problem := change.problem(len(plan)):
        raise ValueError(problem)
    if change.text is None:
        return plan_items(_without(plan, change.position), first)
    items = plan_items(plan, first)
    items[change.position - 1] = _retexted(items[change.position - 1], change.text)
    return items


def _changed_plan(
    plan: list[PlannedStep], change: StepChange, numbering: Numbering
) -> list[PlannedStep]:
    """`plan` with `change` made, checked and numbered as an edited plan is; ValueError saying,
    for people, what stops it."""
    try:
        items = _changed_items(plan, change, numbering.first)
        return accept_plan(_checked_steps(items, numbering), numbering)
    except ValueError as exc:
        raise ValueError(
            f"The change {_preview(change.answer())} cannot be made: {exc}. {REVIEW_ANSWERS}"
        ) from None


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
        wrong and what is accepted, so a typo never strands the run; a change to one step
        pauses again with the changed plan. An approved (or edited) plan starts its first wave
        of steps; a rejected one ends the turn."""
        context = run_context(get_runtime(Context).context, state.get("settings"))
        numbering = Numbering.replan((), state.get("carried_steps", []), self.tools(context))
        plan, refused = state["plan"], ""
        while True:
            question = self.prompts.review_question.format(plan=format_plan(plan))
            description = f"{refused}\n\n{question}" if refused else question
            items = plan_items(plan, numbering.first)
            try:
                asked = paused(review_request(items, description), REVIEW)
                review = parse_plan_review(asked, numbering)
                if review.change is None:
                    break
                plan, refused = _changed_plan(plan, review.change, numbering), ""
            except ValueError as exc:
                refused = str(exc)
        if review.action == "reject":
            reason = f" Reason: {review.reason}" if review.reason else ""
            response = self.prompts.rejected.format(reason=reason)
            return Command(goto=REPLY, update={"response": response, "stop_reason": "rejected"})
        if review.steps is not None:
            plan = accept_plan(review.steps, numbering)
        elif plan is state["plan"]:  # approved as it was first shown
            todos = running_todos(state, context)
            return Command(goto=wave(state, context), update={"todos": todos})
        update: dict[str, Any] = {"plan": plan}
        changed: PlanExecuteState = {**state, "plan": plan}
        if context.plan_integrity == "sealed":  # a person's plan declares the turn's actions
            made = declared(plan)
            update.update(made)
            changed = {**changed, **made}
        publish("plan", REVIEW, steps=plan_view(plan), revised=True, added=[], dropped=[])
        update["todos"] = running_todos(changed, context)
        return Command(goto=wave(changed, context), update=update)
