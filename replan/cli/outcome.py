"""How a run stands once a command is done with it, told to the user: its answer (or `--json`
summary) on stdout, what to do next on stderr, and the exit code."""

from __future__ import annotations

import argparse
import json

from langgraph.types import StateSnapshot

from replan.cli.call_review import is_call_review
from replan.cli.output import ExitCode, emit, one_line, say
from replan.cli.stored_runs import resume_hint, review_hint
from replan.cli.summary import run_status, summarize
from replan.graphs.errors import InvalidInputError, ModelUnavailableError


def report(
    args: argparse.Namespace, snapshot: StateSnapshot, failure: Exception | None
) -> ExitCode:
    """Say how the run stands; `failure` is an error the run stopped with that its checkpoint
    does not show."""
    status = "failed" if failure is not None else run_status(snapshot).state
    if failure is not None:
        say(f"replan: {one_line(str(failure))}")
        say(f"The run is saved; continue it with: {resume_hint(args)}")
        code = ExitCode.FAILED
        if isinstance(failure, ModelUnavailableError):
            code = ExitCode.MODEL_UNAVAILABLE
        elif isinstance(failure, InvalidInputError):
            code = ExitCode.USAGE
    elif status == "waiting_for_approval":
        value = snapshot.interrupts[0].value
        waiting = "A tool call" if is_call_review(value) else "The plan"
        say(f"{waiting} is waiting for approval. Answer with: {review_hint(args, value)}")
        code = ExitCode.AWAITING_APPROVAL
    elif status == "finished":
        code = ExitCode.OK
    elif status == "not_finished":
        code = ExitCode.NOT_FINISHED
    elif status == "rejected":
        code = ExitCode.REJECTED
    else:
        say(f"replan: the run stopped: {run_status(snapshot).text()}")
        say(f"The run is saved; continue it with: {resume_hint(args)}")
        code = ExitCode.FAILED
    if args.json:
        summary = summarize(args.thread_id, snapshot, failure)
        emit(json.dumps(summary, ensure_ascii=False, indent=2))
    elif status in ("finished", "not_finished", "rejected"):
        emit(str(snapshot.values.get("response", "")))
    return code
