"""The review of a tool call that was in flight when its run stopped
(`replan.graphs.durable_calls`): asked on the terminal, or answered with
`resume --approve | --reject [REASON] | --respond RESULT`; each answer is LangChain's
human-in-the-loop decision shape."""

from __future__ import annotations

import argparse
import json
from typing import Any

from replan.cli.output import CliError, ExitCode, say

QUESTION = "Make the call? [a]pprove / [r]eject / respond RESULT:"
PLAN_ACTION = "plan"
"""The action name of a plan review (`replan.graphs.graph_state.PLAN_ACTION`, not imported:
`show` loads no graph modules)."""


def is_call_review(value: Any) -> bool:
    """Whether the interrupt `value` asks about a tool call rather than a plan."""
    if not isinstance(value, dict) or not value.get("action_requests"):
        return False
    return value["action_requests"][0].get("name") != PLAN_ACTION


def _decision(kind: str, message: str | None = None) -> dict[str, Any]:
    decision: dict[str, Any] = {"type": kind}
    if message is not None:
        decision["message"] = message
    return {"decisions": [decision]}


def ask_call(value: dict[str, Any]) -> Any:
    """Ask on the terminal about the call `value` shows; the resume value, or None when the
    input ends (the call keeps waiting)."""
    request = value["action_requests"][0]
    args = json.dumps(request.get("args") or {}, ensure_ascii=False)
    say(f"{request.get('description', '')}\nThe call: {request['name']}({args})")
    try:
        while True:
            say(QUESTION)
            typed = input().strip()
            word, _, rest = typed.partition(" ")
            if word.lower() in ("a", "approve"):
                return _decision("approve")
            if word.lower() in ("r", "reject"):
                return _decision("reject", rest.strip() or None)
            if word.lower() == "respond" and rest.strip():
                return _decision("respond", rest.strip())
            if typed:
                say(f"Not an answer: {typed}")
    except EOFError:
        say("No answer (end of input).")
        return None


def call_answer(args: argparse.Namespace) -> Any:
    """The resume value `--approve`, `--reject` or `--respond` gives a waiting call, or None;
    `--edit-plan` is refused (USAGE): no plan is waiting."""
    if args.edit_plan:
        raise CliError(ExitCode.USAGE, "the run waits on a tool call, not a plan: nothing to edit")
    if args.approve:
        return _decision("approve")
    if args.reject is not None:
        return _decision("reject", args.reject or None)
    if args.respond is not None:
        return _decision("respond", args.respond)
    return None
