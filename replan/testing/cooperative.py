"""A cooperative model, the default responder of `python -m replan.testing`: it answers
`replan check`'s probes as a model that does what it is asked would (a plain reply, one tool
call, two in one reply, a `plan`, a `respond`, a count to 20), and every other request as
replan's scripted model (`replan.testing.plan_script.respond`). The server's `Quirks` then
reshape its replies as the server they imitate would, so `replan check` reports there what it
reports on that server. Like the scripted model, it carries out a plan a reviewer edited and
answers an agent that has replan as its tool."""

from __future__ import annotations

from typing import Any

from replan.cli import probes
from replan.testing import plan_script
from replan.testing.replies import Reply, text, tool_call, tool_calls
from replan.testing.requests import last_user_text

PLAN_STEP = "Look up the time in Paris"
"""The step of its answer to the `plan` probe."""
ANSWER = "Paris"
"""Its answer to the `respond` probe."""
COUNT = " ".join(str(n) for n in range(1, 21))
"""Its answer to the streamed probe."""


def respond(request: dict[str, Any]) -> Reply:
    """The reply a cooperative model gives to `request`: a probe's answer, else the scripted
    model's."""
    # A note asking for the decision's form may follow what is asked.
    asked = last_user_text(request).split("\n\n")[0]
    if asked == probes.CHECK_PLAIN:
        return text("OK")
    if asked == probes.CHECK_ONE_CALL:
        return tool_call(probes.PROBE_TOOL, {"city": "Paris"})
    if asked == probes.CHECK_TWO_CALLS:
        cities = [{"city": "Paris"}, {"city": "Tokyo"}]
        return tool_calls([(probes.PROBE_TOOL, city) for city in cities])
    if asked == probes.CHECK_PLAN:
        return tool_call("plan", {"steps": [PLAN_STEP]})
    if asked == probes.CHECK_RESPOND:
        return tool_call("respond", {"response": ANSWER})
    if asked == probes.CHECK_STREAM:
        return text(COUNT)
    return plan_script.respond(request)
