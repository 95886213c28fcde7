"""The plan review of a run with `--approve-plan`: the dialogue on the terminal (approve, edit or
reject), or the answer `resume --approve | --reject | --edit-plan` gives; each is the value the
waiting review is resumed with."""

from __future__ import annotations

import argparse
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from replan.cli.output import say
from replan.graphs.plan.views import format_plan


@contextmanager
def _interruptible() -> Iterator[None]:
    """Ctrl-C (and SIGTERM, which the command line turns into SIGINT) stops a waiting prompt at
    once: asyncio's own handler would only cancel the run once the prompt returned."""
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _ask(question: str) -> str:
    """One answer typed on the terminal; EOFError on Ctrl-D."""
    say(question)
    return input().strip()


def ask_review(plan: list[Any]) -> Any:
    """Ask on the terminal: approve, edit (type new steps) or reject; the resume value, or None
    when the input ends (Ctrl-D) and the plan keeps waiting. Ctrl-C stops at once (from before
    the first question is shown)."""
    with _interruptible():
        return _review_dialogue(plan)


def _review_dialogue(plan: list[Any]) -> Any:
    say(f"The plan waits for your approval:\n{format_plan(plan)}")
    try:
        while True:
            answer = _ask("Approve this plan? [a]pprove / [e]dit / [r]eject:").lower()
            if answer in ("a", "approve", "y", "yes"):
                return "approve"
            if answer in ("r", "reject", "n", "no"):
                return {"action": "reject", "reason": _ask("Reason (optional):")}
            if answer in ("e", "edit"):
                steps = iter(lambda: _ask("Step (empty line to finish):"), "")
                edited = [step for step in steps if step.strip()]
                if edited:
                    return {"action": "edit", "steps": edited}
                say("An edited plan needs at least one step.")
    except EOFError:
        say("No answer (end of input).")
        return None


def review_from_flags(args: argparse.Namespace) -> Any:
    """The resume value `--approve`, `--reject` or `--edit-plan` asks for, or None."""
    if args.approve:
        return "approve"
    if args.reject is not None:
        return {"action": "reject", "reason": args.reject}
    if args.edit_plan:
        return {"action": "edit", "steps": args.edit_plan}
    return None
