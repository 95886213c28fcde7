"""Where a state-mode task call stands in the model turn that made it (`turn_for`): the task
calls of the same AI message still unanswered, which it replays before its own, told apart by
position and arguments (some servers repeat one call id); and the reply of identical copies of
one call (`report`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolCall, ToolMessage
from pydantic import ValidationError

from replan.tools.task_schemas import PLAIN_SCHEMAS, TASK_TOOL_NAMES


@dataclass(frozen=True)
class Turn:
    """The task calls one tool invocation runs, in order, and which of them are its own."""

    calls: list[ToolCall]
    mine: frozenset[int]


def turn_for(
    messages: Sequence[BaseMessage], tool_call_id: str, name: str, args: Mapping[str, Any]
) -> Turn:
    """Where this call stands in the AI message that made it, told apart by position.

    The calls of the message that have no reply yet are replayed in order, up to this call,
    which runs with the arguments it was given (a wrapper may have edited them). Some servers
    send one id (or an empty one) for every call: then the arguments tell the calls apart.
    Copies of this very call (same id, name and arguments) cannot be told apart, so the
    invocation runs the message up to the last copy and reports the outcome of every copy:
    all copies give the same reply (each still writes its own change). Outside a model turn
    (a direct call), only this call runs.
    """
    own = ToolCall(name=name, args=dict(args), id=tool_call_id)
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if not isinstance(message, AIMessage) or not any(
            c["id"] == tool_call_id for c in message.tool_calls
        ):
            continue
        pending = _unanswered_task_calls(message, messages[position + 1 :])
        mine = [i for i, c in enumerate(pending) if (c["id"], c["name"]) == (tool_call_id, name)]
        if len(mine) > 1:  # a repeated id: the arguments tell the calls apart
            signature = _signature(name, args)
            same = [i for i in mine if _signature(name, pending[i]["args"]) == signature]
            mine = same or mine[:1]
        if not mine:
            break
        calls = [own if i in mine else c for i, c in enumerate(pending[: mine[-1] + 1])]
        return Turn(calls, frozenset(mine))
    return Turn([own], frozenset({0}))


def _unanswered_task_calls(message: AIMessage, later: Sequence[BaseMessage]) -> list[ToolCall]:
    """The task calls of `message` not answered by a ToolMessage in `later`.

    Replies come in call order, so with repeated ids the first calls carrying an id count as
    answered, as many as there are replies to that id. Answered calls are already in the
    state's context (a graph that runs calls one by one) and are not replayed.
    """
    replies: Counter[str | None] = Counter(
        m.tool_call_id for m in later if isinstance(m, ToolMessage)
    )
    pending: list[ToolCall] = []
    for tool_call in message.tool_calls:
        if replies[tool_call["id"]] > 0:
            replies[tool_call["id"]] -= 1
        elif tool_call["name"] in TASK_TOOL_NAMES:
            pending.append(tool_call)
    return pending


def _signature(name: str, args: Mapping[str, Any]) -> dict[str, Any] | None:
    """The arguments of a task call as the tool sees them (None when they do not validate)."""
    try:
        return PLAIN_SCHEMAS[name].model_validate(dict(args)).model_dump()
    except ValidationError:
        return None


def report(outcomes: Sequence[tuple[bool, str]]) -> tuple[bool, str]:
    """The reply to a call: its own outcome, or for identical copies, each one in turn."""
    if len(set(outcomes)) == 1:
        return outcomes[0]
    lines = (
        f"{n}. {text if ok else 'Refused: ' + text}" for n, (ok, text) in enumerate(outcomes, 1)
    )
    header = (
        f"This exact call was sent {len(outcomes)} times in one message under the same call "
        "id, so every copy gets this report. They ran in order:"
    )
    return any(ok for ok, _ in outcomes), "\n".join([header, *lines])
