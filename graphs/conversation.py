"""What a turn reads of the conversation on its thread: the objective (the last user message)."""

from __future__ import annotations

from langchain_core.messages import AnyMessage, HumanMessage

from replan.graphs.errors import InvalidInputError
from replan.graphs.graph_state import PlanExecuteInput


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
