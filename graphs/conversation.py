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


def _last_answer(messages: Sequence[BaseMessage]) -> int:
    """The index of the last answer (any AI message) in `messages`; -1 when there is none."""
    return max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=-1)


def turn_messages(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The messages of the turn under way: those after the last answer."""
    return list(messages[_last_answer(messages) + 1 :])


def objective_text(messages: Sequence[AnyMessage]) -> str:
    """The objective of the turn under way: the text of its user messages, in order."""
    return "\n\n".join(m.text for m in turn_messages(messages) if isinstance(m, HumanMessage))


def user_texts(messages: Sequence[AnyMessage]) -> tuple[str, ...]:
    """What the user wrote in the whole conversation, message by message."""
    return tuple(m.text for m in messages if isinstance(m, HumanMessage) and m.text.strip())


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
    earlier = messages[: _last_answer(messages) + 1]
    lines = [
        f"{'User' if isinstance(m, HumanMessage) else 'Answer'}: {_shorten(m.text)}"
        for m in earlier
        if isinstance(m, HumanMessage | AIMessage) and m.text.strip()
    ]
    return "\n".join(lines)


def with_note(messages: Sequence[BaseMessage], note: str) -> list[BaseMessage]:
    """`messages` with `note` at the end of the last user message (a new one when the last is
    not a user's: some chat templates refuse two user messages in a row). What differs between
    requests goes last, after the head they share."""
    shown = list(messages)
    if shown and isinstance(shown[-1], HumanMessage):
        shown[-1] = HumanMessage(f"{shown[-1].text}\n\n{note}")
        return shown
    return [*shown, HumanMessage(note)]


def with_earlier_results(messages: Sequence[AnyMessage], earlier: str) -> list[BaseMessage]:
    """`messages` as the planner reads them: the last answer followed by `earlier` (the results
    of the turn it ended); as they are when there is no earlier answer or nothing to add."""
    shown: list[BaseMessage] = list(messages)
    last = _last_answer(shown)
    if last < 0 or not earlier:
        return shown
    shown[last] = AIMessage(content=f"{shown[last].text}\n\n{earlier}", name=shown[last].name)
    return shown
