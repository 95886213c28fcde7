"""State schemas of the plan–execute–replan graph, and the views of it that prompts show.

The graph keeps the user's `messages`, the `plan` (steps still to do; the executor runs
`plan[0]`), the `executed_steps` with their results, the final `response`, the shared task list
(`tasks_context`) and how many execute→replan rounds ran (`iterations`).
"""

from __future__ import annotations

import operator
from typing import Annotated, Literal

from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.graph import add_messages
from typing_extensions import TypedDict

from replan.graphs.errors import InvalidInputError
from replan.state.task_views import format_task_list
from replan.state.tasks import TaskContext
from replan.tools.task_state import TasksState, update_task_context


class ExecutedStep(TypedDict):
    """One carried-out step and the executor's report on it."""

    step: str
    result: str


class PlanExecuteInput(TypedDict):
    """What a caller gives the graph: the conversation holding the objective."""

    messages: Annotated[list[AnyMessage], add_messages]


StopReason = Literal["", "max_iterations"]
"""Why a run ended without meeting its objective; "" when it did (or was rejected at review)."""


class PlanExecuteOutput(TypedDict, total=False):
    """What the graph returns: the answer, the steps left, the steps done, and `stop_reason`
    when the run ended without meeting the objective."""

    response: str
    plan: list[str]
    executed_steps: list[ExecutedStep]
    stop_reason: StopReason


class PlanExecuteState(PlanExecuteInput, total=False):
    """The full state of the plan–execute graph."""

    plan: list[str]
    executed_steps: Annotated[list[ExecutedStep], operator.add]
    response: str
    stop_reason: StopReason
    tasks_context: Annotated[TaskContext, update_task_context]
    iterations: int


class ExecutorState(TasksState, total=False):
    """State of the executor's inner tool loop; `model_calls` counts its model turns."""

    model_calls: int


def objective_text(messages: list[AnyMessage]) -> str:
    """The objective: the text of the user's messages, in order."""
    return "\n\n".join(m.text for m in messages if isinstance(m, HumanMessage))


def require_objective(state: PlanExecuteInput) -> str:
    """The objective of a run; `InvalidInputError` when the user's messages hold no text.

    Checked before any model call: an empty input, no user message, only a system message or
    only whitespace would otherwise make the model plan for nothing.
    """
    objective = objective_text(state.get("messages") or [])
    if not objective.strip():
        raise InvalidInputError(
            "the input has no objective: give at least one user message with text, e.g. "
            '{"messages": [{"role": "user", "content": "Compare three task queues"}]}'
        )
    return objective


def format_plan(steps: list[str]) -> str:
    """A numbered list of steps, or "(none)"."""
    return "\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1)) or "(none)"


def format_executed_steps(steps: list[ExecutedStep]) -> str:
    """Each executed step with its result, numbered, or "(none yet)"."""
    blocks = (
        f"{i}. {done['step']}\n   Result: {done['result']}" for i, done in enumerate(steps, 1)
    )
    return "\n".join(blocks) or "(none yet)"


def briefing(state: PlanExecuteState) -> dict[str, str]:
    """The progress so far, as the prompt placeholders name it."""
    return {
        "objective": objective_text(state["messages"]),
        "plan": format_plan(state.get("plan", [])),
        "executed_steps": format_executed_steps(state.get("executed_steps", [])),
        "tasks": format_task_list(state.get("tasks_context") or TaskContext()),
    }
