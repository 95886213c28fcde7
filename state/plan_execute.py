"""State of the plan–execute–replan graph, and the pure operations on it.

The graph keeps the user's `messages`, the `plan` (steps still to do; the executor runs
`plan[0]`), the `executed_steps` with their results, the final `response`, the shared task list
(`tasks_context`) and how many execute→replan rounds ran (`iterations`).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.graph import add_messages
from pydantic import BaseModel, Field, ValidationError, field_validator
from typing_extensions import TypedDict

from state.tasks import TaskContext
from state.tasks_state import TasksState, keep_last_task_context


class ExecutedStep(TypedDict):
    """One carried-out step and the executor's report on it."""

    step: str
    result: str


class PlanExecuteInput(TypedDict):
    """What a caller gives the graph: the conversation holding the objective."""

    messages: Annotated[list[AnyMessage], add_messages]


class PlanExecuteOutput(TypedDict, total=False):
    """What the graph returns: the answer, the steps left and the steps done."""

    response: str
    plan: list[str]
    executed_steps: list[ExecutedStep]


class PlanExecuteState(PlanExecuteInput, total=False):
    """The full state of the plan–execute graph."""

    plan: list[str]
    executed_steps: Annotated[list[ExecutedStep], operator.add]
    response: str
    tasks_context: Annotated[TaskContext, keep_last_task_context]
    iterations: int


class ExecutorState(TasksState, total=False):
    """State of the executor's inner tool loop; `model_calls` counts its model turns."""

    model_calls: int


class PlanArgs(BaseModel):
    """Arguments of the `plan` decision: a non-empty list of non-blank steps."""

    steps: list[str] = Field(min_length=1)

    @field_validator("steps")
    @classmethod
    def _no_blank_steps(cls, steps: list[str]) -> list[str]:
        cleaned = [step.strip() for step in steps]
        if not all(cleaned):
            raise ValueError("a step must not be blank")
        return cleaned


class RespondArgs(BaseModel):
    """Arguments of the `respond` decision: the final answer."""

    response: str = Field(min_length=1)


def objective_text(messages: list[AnyMessage]) -> str:
    """The objective: the text of the user's messages, in order."""
    return "\n\n".join(m.text for m in messages if isinstance(m, HumanMessage))


def format_plan(steps: list[str]) -> str:
    """A numbered list of steps, or "(none)"."""
    return "\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1)) or "(none)"


def format_executed_steps(steps: list[ExecutedStep]) -> str:
    """Each executed step with its result, numbered, or "(none yet)"."""
    blocks = (
        f"{i}. {done['step']}\n   Result: {done['result']}" for i, done in enumerate(steps, 1)
    )
    return "\n".join(blocks) or "(none yet)"


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
