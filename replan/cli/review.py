"""The plan review of a run with `--approve-plan`: the dialogue on the terminal (approve, edit,
change one step or reject), or the answer `resume --approve | --reject | --edit-plan` gives;
each is the value the waiting review is resumed with.

An edit that cannot be a plan in any run is refused here, saying why, before the run is
resumed; the review node checks the rest (`replan.graphs.nodes.review`, imported where an
answer is read: `show` and `threads` import this module and load no model stack).
"""

from __future__ import annotations

import argparse
import json
import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from replan.cli.output import CliError, ExitCode, say
from replan.graphs.plan.views import format_plan

QUESTION = "Approve this plan? [a]pprove / [e]dit / [r]eject:"
FORMS = "(or change one step: N: TEXT gives step N a new text, drop N leaves it out; ? for help)"
HELP = """Answers:
  a, approve          run the plan as it is
  r, reject [REASON]  do not run it (asks for the reason when none is given)
  e, edit             type the whole plan anew, one step a line, an empty line to finish
  [...]               the whole plan as a JSON list of steps
  N: TEXT, edit N: TEXT
                      give step N a new text; it waits for the same steps (asks for the
                      text when none is given)
  drop N              leave step N out; the steps that waited for it wait for what it
                      waited for
A step may be a JSON object: {"step": "...", "depends_on": [numbers of earlier steps]}.
After a change to one step the changed plan is shown and asked about again.
Ctrl-D leaves the plan waiting; Ctrl-C stops."""
APPROVE = ("a", "approve", "y", "yes")
REJECT = ("r", "reject", "n", "no")
EDIT = ("e", "edit")
REJECT_WITH_REASON = re.compile(r"(?:r|reject)\s+(.+)", re.IGNORECASE)
EDIT_STEP = re.compile(r"(?:e(?:dit)?\s*(\d+)\s*:?|(\d+)\s*:)\s*(.*)", re.IGNORECASE)
DROP_STEP = re.compile(r"d(?:rop)?\s*(\d+)", re.IGNORECASE)


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


def refused_because(value: Any) -> str:
    """Why the graph refused the last answer to the review interrupt `value` ("" when it
    asks for the first time), without the list of answers it takes."""
    from replan.graphs.graph_state import review_refusal
    from replan.graphs.nodes.review import REVIEW_ANSWERS

    return review_refusal(value).removesuffix(REVIEW_ANSWERS).strip()


def ask_review(plan: list[Any], refused: str = "") -> Any:
    """Ask on the terminal: approve, edit (type new steps), change one step or reject; the
    resume value, or None when the input ends (Ctrl-D) and the plan keeps waiting. Ctrl-C stops
    at once (from before the first question is shown). `refused` says why the graph did not
    take the answer before."""
    with _interruptible():
        if refused:
            say(f"The edited plan was not taken: {refused}")
        return _review_dialogue(plan)


def _review_dialogue(plan: list[Any]) -> Any:
    say(f"The plan waits for your approval:\n{format_plan(plan)}\n{FORMS}")
    try:
        while True:
            answer = _read_answer(_ask(QUESTION), len(plan))
            if answer is not None:
                return answer
    except EOFError:
        say("No answer (end of input).")
        return None


def _read_answer(typed: str, count: int) -> Any:
    """The resume value `typed` asks for at the review of a plan of `count` steps (asking for
    more when it needs more), or None to ask again, having said why."""
    from replan.graphs.nodes.review import StepChange

    word = typed.lower()
    if not word:
        return None
    if word in ("?", "h", "help"):
        say(HELP)
        return None
    if word in APPROVE:
        return "approve"
    if word in REJECT:
        return {"action": "reject", "reason": _ask("Reason (optional):")}
    if match := REJECT_WITH_REASON.fullmatch(typed):
        return {"action": "reject", "reason": match[1]}
    if word in EDIT:
        steps = iter(lambda: _ask("Step (empty line to finish):"), "")
        return _whole_plan([step for step in steps if step.strip()])
    if typed.startswith("["):
        try:
            steps = json.loads(typed)
        except ValueError as exc:
            return _refused(f"it is not a JSON list ({exc})")
        return _whole_plan(steps)
    if match := EDIT_STEP.fullmatch(typed):
        position = int(match[1] or match[2])
        change = StepChange(position, match[3] or _ask(f"New text for step {position}:"))
        if not change.text:
            say("The plan was not changed: the new text is empty.")
            return None
    elif match := DROP_STEP.fullmatch(typed):
        change = StepChange(int(match[1]))
    else:
        say(f"Not an answer: {typed} (? lists the answers).")
        return None
    if problem := change.problem(count):
        say(f"The plan was not changed: {problem}.")
        return None
    return change.answer()


def _whole_plan(steps: Any) -> Any:
    """The resume value of an edit to `steps`, or None when they cannot be a plan (said why)."""
    from replan.graphs.nodes.review import edit_problems

    if problem := edit_problems(steps):
        return _refused(problem)
    return {"action": "edit", "steps": steps}


def _refused(problem: str) -> None:
    say(f"The edited plan was not taken: {problem}.")


def review_from_flags(args: argparse.Namespace) -> Any:
    """The resume value `--approve`, `--reject` or `--edit-plan` asks for, or None; an edited
    plan that cannot be one is refused before the run is resumed (AWAITING_APPROVAL: the plan
    still waits)."""
    if args.approve:
        return "approve"
    if args.reject is not None:
        return {"action": "reject", "reason": args.reject}
    if args.edit_plan:
        from replan.graphs.nodes.review import edit_problems

        if problem := edit_problems(args.edit_plan):
            raise CliError(ExitCode.AWAITING_APPROVAL, f"the edited plan was not taken: {problem}")
        return {"action": "edit", "steps": args.edit_plan}
    return None
