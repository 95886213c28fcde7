"""A scripted model answering the probes of `replan check` as a cooperative model would."""

from __future__ import annotations

import json
from typing import Any

from replan.cli import server_check as texts
from replan.cli.server_check import PROBE_TOOL
from replan.testing import Reply, text, tool_call, tool_calls

PLAN_STEP = "Look up the time in Paris"
ANSWER = "Paris"
COUNT = " ".join(str(n) for n in range(1, 21))


def _last_user_text(request: dict[str, Any]) -> str:
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    return content if isinstance(content, str) else json.dumps(content)


def respond(request: dict[str, Any]) -> Reply:
    """The reply a cooperative model gives to each probe (the server's quirks then apply)."""
    asked = _last_user_text(request)
    offered = {tool["function"]["name"] for tool in request.get("tools") or []}
    if PROBE_TOOL in offered:
        if asked == texts.CHECK_TWO_CALLS:
            return tool_calls([(PROBE_TOOL, {"city": "Paris"}), (PROBE_TOOL, {"city": "Tokyo"})])
        return tool_call(PROBE_TOOL, {"city": "Paris"})
    if asked == texts.CHECK_PLAN:
        return tool_call("plan", {"steps": [PLAN_STEP]})
    if asked == texts.CHECK_RESPOND:
        return tool_call("respond", {"response": ANSWER})
    if asked == texts.CHECK_STREAM:
        return text(COUNT)
    return text("OK")
