"""A scripted model that makes one mistake per role before it answers well: for tests of what
the graph counts as corrected mistakes (`corrected_mistakes`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replan.graphs.nodes.tool_loop import INVALID_ARGUMENTS
from replan.graphs.prompts import DEFAULT_PROMPTS
from replan.testing import Reply, Responder
from replan.testing import plan_script as script

CORRECTIONS = tuple(
    template.split("{")[0]
    for template in (
        DEFAULT_PROMPTS.correction,
        DEFAULT_PROMPTS.json_correction,
        DEFAULT_PROMPTS.text_call_correction,
        INVALID_ARGUMENTS,
    )
)
"""How the messages begin that tell the model its last reply was a mistake: the decision
corrections, the executor's text-call correction and its reply to invalid JSON arguments."""


def is_correction(message: dict[str, Any]) -> bool:
    """Whether a request message tells the model that its last reply was a mistake."""
    return str(message.get("content") or "").startswith(CORRECTIONS)


def told(request: dict[str, Any]) -> int:
    """How many corrections the request's conversation holds."""
    return sum(map(is_correction, request["messages"]))


def as_if_right(request: dict[str, Any]) -> dict[str, Any]:
    """The request without the mistaken replies and their corrections, as if the model had
    answered well at once (the planner and replanner send only the corrections back, the
    executor its mistaken reply too)."""
    messages = request["messages"]
    kept = [
        message
        for message, after in zip(messages, [*messages[1:], {}], strict=True)
        if not is_correction(message)
        and not (message.get("role") == "assistant" and is_correction(after))
    ]
    return {**request, "messages": kept}


def first_turn(request: dict[str, Any]) -> bool:
    """Whether the model has not answered yet in this conversation."""
    return not told(request) and not any(m.get("role") == "assistant" for m in request["messages"])


def mistaken(roles: Mapping[str, Reply], respond: Responder = script.respond) -> Responder:
    """`respond`, except that each role (`plan_execute_script.classify`) in `roles` first sends
    its mistaken reply (the executor on the first turn of every step), then answers well once
    corrected."""

    def answer(request: dict[str, Any]) -> Reply:
        role = script.classify(request).role
        mistake = roles.get(role)
        if mistake is not None and first_turn(request):
            return mistake
        return respond(as_if_right(request))

    return answer
