"""A scripted model that makes one mistake per role before it answers well: for tests of what
the graph counts as corrected mistakes (`corrected_mistakes`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests import plan_execute_script as script
from tests.scripted_openai import Reply, Responder

CORRECTION_MARKERS = ("could not be used", "not valid JSON", "it was not run")
"""Words of the decision correction, the executor's invalid-arguments reply and its text-call
correction (`replan.graphs.prompts`, `replan.graphs.executor`)."""


def is_correction(message: dict[str, Any]) -> bool:
    """Whether a request message tells the model that its last reply was a mistake."""
    return any(marker in str(message.get("content")) for marker in CORRECTION_MARKERS)


def told(request: dict[str, Any]) -> int:
    """How many corrections of any kind the request's conversation holds."""
    return sum(map(is_correction, request["messages"]))


def as_if_right(request: dict[str, Any]) -> dict[str, Any]:
    """A decision request without its mistaken replies and their corrections (scripts read
    the objective from the last user message)."""
    kept = [m for m in request["messages"] if m.get("role") != "assistant" and not is_correction(m)]
    return {**request, "messages": kept}


def first_turn(request: dict[str, Any]) -> bool:
    """Whether the model has not answered yet in this conversation."""
    return not any(m.get("role") == "assistant" for m in request["messages"])


def mistaken(roles: Mapping[str, Reply], respond: Responder = script.respond) -> Responder:
    """`respond`, except that each role (`plan_execute_script.classify`) in `roles` first sends
    its mistaken reply (the executor on the first turn of every step), then answers well once
    corrected."""

    def answer(request: dict[str, Any]) -> Reply:
        role = script.classify(request).role
        mistake = roles.get(role)
        if mistake is not None and not told(request) and first_turn(request):
            return mistake
        return respond(request if role == "executor" else as_if_right(request))

    return answer
