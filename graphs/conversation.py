"""What a turn reads of the conversation on its thread.

A thread is a conversation: each user message that comes after the last answer opens a turn,
and each turn ends with its answer (or its "not finished" report) appended to `messages`. A
turn's objective is the text of the user messages after the last answer; what the planner is
shown of earlier turns is the conversation itself, the answers in it, and the results of the
turn just before (by step number, so a plan may use them instead of looking them up again).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage

from replan.graphs.errors import InvalidInputError
from replan.graphs.graph_state import PlanExecuteInput, PlanExecuteState

REPLY_NAME = "replan"
"""The `name` of the answer messages a turn appends."""
EARLIER_CHARS = 300
"""How much of each earlier objective and answer the replanner is shown."""


def turn_messages(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The messages of the turn under way: those after the last answer (any AI message)."""
    last_answer = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=-1)
    return list(messages[last_answer + 1 :])


def objective_text(messages: Sequence[AnyMessage]) -> str:
    """The objective of the turn under way: the text of its user messages, in order."""
    return "\n\n".join(m.text for m in turn_messages(messages) if isinstance(m, HumanMessage))


def turn_objective(state: PlanExecuteState) -> str:
    """The objective of the thread's last turn: as its planner read it, else (a thread saved
    before turns, or one not planned yet) from its messages."""
    return state.get("objective") or objective_text(state.get("messages") or [])


def require_objective(state: PlanExecuteInput) -> str:
    """The objective of a turn; `InvalidInputError` when its user messages hold no text.

    Checked before any model call: an empty input, no user message, only a system message or
    only whitespace would otherwise make the model plan for nothing.
    """
    objective = objective_text(state.get("messages") or [])
    if not objective.strip():
        raise InvalidInputError(
            "the input has no objective: give at least one user message with text after the "
            'last answer, e.g. {"messages": [{"role": "user", "content": "Compare three task '
            'queues"}]}'
        )
    return objective


def _shorten(text: str, limit: int = EARLIER_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def earlier_exchanges(messages: Sequence[AnyMessage]) -> str:
    """The conversation before the turn under way, one short line per user message and
    answer; "" when there is none."""
    earlier = messages[: len(messages) - len(turn_messages(messages))]
    lines = [
        f"{'User' if isinstance(m, HumanMessage) else 'Answer'}: {_shorten(m.text)}"
        for m in earlier
        if isinstance(m, HumanMessage | AIMessage) and m.text.strip()
    ]
    return "\n".join(lines)


def with_earlier_results(messages: Sequence[AnyMessage], earlier: str) -> list[BaseMessage]:
    """`messages` as the planner reads them: the last answer followed by `earlier` (the results
    of the turn it ended); as they are when there is no earlier answer or nothing to add."""
    shown: list[BaseMessage] = list(messages)
    answers = [i for i, m in enumerate(shown) if isinstance(m, AIMessage)]
    if not answers or not earlier:
        return shown
    last = answers[-1]
    shown[last] = AIMessage(content=f"{shown[last].text}\n\n{earlier}", name=shown[last].name)
    return shown
