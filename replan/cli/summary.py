"""What a stored run is: its status, a summary for scripts (`--json`) and reports for people.

Everything here reads a `StateSnapshot` (its values, with the run's settings, and the metadata
the CLI stored: `--tools` reference, start time); nothing talks to a model or writes.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, cast

from replan.cli.output import SNIPPET_CHARS, one_line
from replan.cli.pricing import Pricing, run_pricing
from replan.cli.usage_report import tally_json, usage_report, usage_summary
from replan.graphs.context import Bounds
from replan.graphs.conversation import turn_objective
from replan.graphs.errors import InvalidInputError
from replan.graphs.graph_state import (
    DecisionFallback,
    PlanExecuteState,
    Turn,
    effective_mode,
    review_summary,
)
from replan.graphs.persistence import STARTED_KEY, saved_settings, stored_tools
from replan.graphs.plan.scheduling import steps_left
from replan.graphs.plan.tool_steps import first_line
from replan.graphs.plan.views import format_executed_steps, format_plan
from replan.state import TaskContext, format_task_list
from replan.state.usage import tally_text, total_tally

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

State = Literal[
    "finished",
    "not_finished",
    "rejected",
    "waiting_for_approval",
    "failed",
    "interrupted",
    "running",
]
_EXCEPTION_REPR = re.compile(r"^([A-Za-z_][\w.]*)\((.*)\)$", re.S)
INPUT_ERROR = InvalidInputError.__name__
"""The error of a run given input it cannot work on: the input failed, not the node."""


@dataclass(frozen=True)
class RunError:
    """Why a node failed: the exception's type name and message."""

    node: str
    type: str
    message: str

    @classmethod
    def of(cls, node: str, error: Exception | str) -> RunError:
        """From a live exception, or from the `Type('message')` text a checkpoint keeps."""
        if isinstance(error, Exception):
            return cls(node, type(error).__name__, str(error))
        match = _EXCEPTION_REPR.match(error.strip())
        if match is None:
            return cls(node, "", error)
        try:
            args = list(ast.literal_eval(f"[{match[2]}]"))
        except (ValueError, SyntaxError):
            return cls(node, match[1], match[2])
        message = str(args[0]) if len(args) == 1 else ", ".join(map(str, args))
        return cls(node, match[1], message)

    def text(self) -> str:
        """`message (Type)`, as people read it."""
        return f"{self.message} ({self.type})" if self.type else self.message

    def reason(self) -> str:
        """The message's first clause, on one line: an `InvalidInputError` says what is wrong
        with the input, then after ": " how to give it."""
        return one_line(self.message.partition(": ")[0])


@dataclass(frozen=True)
class Status:
    """Where a run stands. `nodes` are where it failed or stopped; `stop_reason` is the
    state's own, set when the run ended without meeting its objective."""

    state: State
    nodes: tuple[str, ...] = ()
    stop_reason: str = ""
    errors: tuple[RunError, ...] = ()
    after: bool = False
    """Stopped after `nodes` ran (their writes are saved, the checkpoint that folds them in
    is not), rather than at them."""
    holder: str = ""
    """For a running run, the process that runs it (`replan.graphs.thread_leases`)."""

    def text(self) -> str:
        """finished / not finished (reason) / rejected / waiting for approval / failed at X /
        failed: REASON (its input refused, `RunError.reason`) / interrupted at X (or after X)."""
        words = self.state.replace("_", " ")
        if self.holder:
            return f"{words} in {self.holder}"
        if self.stop_reason and self.state == "not_finished":
            return f"{words} ({self.stop_reason})"
        if self.errors and all(error.type == INPUT_ERROR for error in self.errors):
            return f"{words}: {self.errors[0].reason()}"
        if self.nodes:
            return f"{words} {'after' if self.after else 'at'} {', '.join(self.nodes)}"
        return words


def is_finished(snapshot: StateSnapshot) -> bool:
    """Whether the run has nothing left to do (met its objective or not).

    Not `not snapshot.next`: `next` leaves out tasks whose writes were saved but not yet folded
    into a checkpoint (a process killed in between), and such a run must still be resumed.
    """
    return not snapshot.tasks


def run_status(snapshot: StateSnapshot, holder: str = "") -> Status:
    """The status of the run `snapshot` shows; running in `holder` when a process holds the
    thread's lease and the run has not ended."""
    if holder and not is_finished(snapshot):
        return Status("running", holder=holder)
    if snapshot.interrupts:
        return Status("waiting_for_approval")
    if is_finished(snapshot):
        stop_reason = str(snapshot.values.get("stop_reason") or "")
        if stop_reason == "rejected":
            return Status("rejected", stop_reason=stop_reason)
        return Status("not_finished" if stop_reason else "finished", stop_reason=stop_reason)
    failed = [task for task in snapshot.tasks if task.error]
    if failed:
        errors = tuple(RunError.of(task.name, task.error) for task in failed if task.error)
        return Status("failed", tuple(task.name for task in failed), errors=errors)
    if snapshot.next:
        return Status("interrupted", tuple(snapshot.next))
    return Status("interrupted", tuple(task.name for task in snapshot.tasks), after=True)


def cli_start(snapshot: StateSnapshot) -> str | None:
    """When the CLI started the run (the time it stores in the run's checkpoint metadata); None
    for a run started elsewhere (the library, a server)."""
    stored = (snapshot.metadata or {}).get(STARTED_KEY)
    return str(stored) if stored else None


def run_settings(snapshot: StateSnapshot) -> dict[str, Any] | None:
    """The settings the CLI stored with the run, as the run applies them: a bound the run left
    unset is the graph's default (the CLI builds its graph with the defaults), and the decision
    mode is the one the run now asks in (the checkpoints written before a fallback still name
    the mode it started with)."""
    settings = saved_settings(snapshot.values, snapshot.metadata)
    if not settings:
        return settings
    if (tools := stored_tools(snapshot.metadata)) is not None:
        settings["tools"] = tools
    defaults = Bounds()
    for bound in fields(Bounds):
        if bound.name in settings and settings[bound.name] is None:
            settings[bound.name] = getattr(defaults, bound.name)
    record = snapshot.values.get("decision_mode")
    if record and settings.get("decision_mode"):
        settings["decision_mode"] = effective_mode(settings["decision_mode"], record)
    return settings


def fallback_line(fallback: DecisionFallback) -> str:
    """What a run says when it left a way of asking for decisions: the model server refused
    it, the model's replies to it kept carrying no decision (`MISTAKES_BEFORE_FALLBACK` in a
    row, or one run on to the token limit), the server did not enforce a forced call, or it is
    known not to enforce the mode."""
    then = f"asking for decisions as {fallback['fallback']} from now on"
    if fallback.get("reason") == "mistakes":
        return f"the model's replies to {fallback['asked']} carried no decision; {then}"
    if fallback.get("reason") == "known":
        return f"the model server is known not to enforce {fallback['asked']}; {then}"
    if fallback.get("reason") == "unenforced":
        asked = fallback["asked"]
        return f"the model server sent back as text a call it was forced to make ({asked}); {then}"
    return f"model server refused {fallback['asked']} (HTTP {fallback['status']}); {then}"


def _tasks(snapshot: StateSnapshot) -> TaskContext:
    return snapshot.values.get("tasks_context") or TaskContext()


def run_prices(snapshot: StateSnapshot, given: Mapping[str, float] | None = None) -> Pricing | None:
    """The price for the run's cost: `given` (`price_in`, `price_out` from the command line),
    else the run's stored settings (its own prices, or its model's list price)."""
    saved = saved_settings(snapshot.values, snapshot.metadata) or {}
    return run_pricing({**saved, **(given or {})})


def summarize(
    thread_id: str,
    snapshot: StateSnapshot,
    failure: Exception | None = None,
    prices: Mapping[str, float] | None = None,
    *,
    started_at: str | None = None,
    holder: str = "",
) -> dict[str, Any]:
    """The run as one JSON-ready document, keyed by the state's own names.

    `failure` is an error the caller saw that the checkpoint does not show (then the run is
    reported failed with it); `prices` (`price_in`, `price_out`) override the run's own;
    `started_at` is when a run the CLI did not start began (`stored_runs.run_start`); `holder`
    the process running it now, if any.
    """
    values = cast(PlanExecuteState, snapshot.values)
    status = run_status(snapshot, holder)
    errors = [vars(error) for error in status.errors]
    pricing = run_prices(snapshot, prices)
    if failure is not None and not errors:
        status = Status("failed", status.nodes)
        errors = [vars(RunError.of("", failure))]
    review = review_summary(snapshot.interrupts[0].value) if snapshot.interrupts else None
    return {
        "thread_id": thread_id,
        "status": status.state,
        "stop_reason": status.stop_reason,
        "nodes": list(status.nodes),
        "objective": turn_objective(values),
        "plan": [] if status.state == "rejected" else steps_left(values),
        "executed_steps": [dict(done) for done in values.get("executed_steps", [])],
        "tasks": [task.model_dump(mode="json") for task in _tasks(snapshot).sorted_tasks()],
        "response": values.get("response", ""),
        "turn": len(values.get("turns", [])) + 1,
        "turns": [turn_summary(turn, pricing) for turn in values.get("turns", [])],
        "recovered_calls": values.get("recovered_calls", 0),
        "corrected_mistakes": values.get("corrected_mistakes", 0),
        "reused_calls": values.get("reused_calls", 0),
        "usage": usage_summary(values, pricing),
        "review": review,
        "error": errors[0] if errors else None,
        "settings": run_settings(snapshot),
        "decision_mode": values.get("decision_mode"),
        "started_at": started_at or cli_start(snapshot),
        "updated_at": snapshot.created_at,
    }


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def local_time(timestamp: str | None) -> str:
    """An ISO-8601 timestamp as local `YYYY-MM-DD HH:MM:SS`, or "-"."""
    if not timestamp:
        return "-"
    return datetime.fromisoformat(timestamp).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def describe_run(
    thread_id: str,
    snapshot: StateSnapshot,
    prices: Mapping[str, float] | None = None,
    *,
    started_at: str | None = None,
    answer_with: str = "",
    holder: str = "",
) -> str:
    """A multi-line report of a stored run: status (and why it failed), times, settings,
    objective, steps, plan, tasks, model usage (and cost, see `run_prices`) and answer; for a
    plan waiting for approval, the review's question (which says why the last answer was
    refused) and `answer_with`, the commands that answer it (`stored_runs.review_hint`).
    `started_at` is when a run the CLI did not start began (`stored_runs.run_start`); `holder`
    the process running it now, if any."""
    values = cast(PlanExecuteState, snapshot.values)
    status = run_status(snapshot, holder)
    parts = [f"Thread: {thread_id}", f"Status: {status.text()}"]
    parts += [f"Error: {error.text()}" for error in status.errors]
    parts += [
        f"Started: {local_time(started_at or cli_start(snapshot))}",
        f"Updated: {local_time(snapshot.created_at)}",
    ]
    if settings := run_settings(snapshot):
        lines = "\n".join(
            f"{key}: {'(not set)' if value is None else value}" for key, value in settings.items()
        )
        parts.append(f"Settings:\n{_indent(lines)}")
    if record := values.get("decision_mode"):
        lines = "\n".join(fallback_line(fallback) for fallback in record["fallbacks"])
        parts.append(f"Decisions asked as {record['mode']}:\n{_indent(lines)}")
    if earlier := values.get("turns"):
        lines = "\n".join(_turn_line(number, turn) for number, turn in enumerate(earlier, 1))
        parts.append(f"Earlier turns:\n{_indent(lines)}")
        parts.append(f"Turn {len(earlier) + 1}:")
    parts += [
        f"Objective:\n{_indent(turn_objective(values))}",
        f"Executed steps:\n{_indent(format_executed_steps(values.get('executed_steps', [])))}",
        _plan_part(status, values),
        f"Tasks:\n{_indent(format_task_list(_tasks(snapshot), empty='(none)'))}",
        f"Usage:\n{_indent(usage_report(values, run_prices(snapshot, prices)))}",
    ]
    if recovered := values.get("recovered_calls", 0):
        parts.append(f"Tool calls read from the model's text: {recovered}")
    if mistakes := values.get("corrected_mistakes", 0):
        parts.append(f"Model mistakes corrected: {mistakes}")
    if reused := values.get("reused_calls", 0):
        parts.append(f"Tool calls not made again (an earlier step's result reused): {reused}")
    if values.get("response"):
        title = "Answer" if status.state == "finished" else "Report"
        parts.append(f"{title}:\n{_indent(values['response'])}")
    if status.state == "waiting_for_approval":
        if question := review_summary(snapshot.interrupts[0].value)["question"]:
            parts.append(f"Review question:\n{_indent(question)}")
        if answer_with:
            parts.append(f"Answer with: {answer_with}")
    return "\n".join(parts)


def _turn_line(number: int, turn: Turn) -> str:
    """One earlier turn for people: its objective, how it ended, its steps and model calls."""
    ended = f"not finished ({turn['stop_reason']})" if turn["stop_reason"] else "answered"
    steps = len(turn["executed_steps"])
    return (
        f"{number}. {first_line(turn['objective'], SNIPPET_CHARS)} — {ended}, "
        f"{steps} step{'s' * (steps != 1)}, {tally_text(total_tally(turn['usage']))}: "
        f"{first_line(turn['response'], SNIPPET_CHARS)}"
    )


def turn_summary(turn: Turn, pricing: Pricing | None) -> dict[str, Any]:
    """An earlier turn for scripts."""
    return {
        "objective": turn["objective"],
        "stop_reason": turn["stop_reason"],
        "response": turn["response"],
        "executed_steps": [dict(done) for done in turn["executed_steps"]],
        "plan": list(turn["plan"]),
        "usage": tally_json(total_tally(turn["usage"]), pricing),
    }


def _plan_part(status: Status, values: PlanExecuteState) -> str:
    """The steps still to do, or the plan a reviewer rejected (none of it is to do)."""
    if status.state == "rejected":
        rejected = format_plan(values.get("plan", []))
        return f"Plan (rejected at review, not carried out):\n{_indent(rejected)}"
    return f"Plan (steps still to do):\n{_indent(format_plan(steps_left(values)))}"


THREADS_HEADER = ("THREAD", "STATUS", "UPDATED", "OBJECTIVE")


def threads_table(
    runs: list[tuple[str, StateSnapshot]], holders: Mapping[str, str] | None = None
) -> str:
    """A header and one aligned row per run: thread id, status (running in the process of
    `holders`, by thread), last update, objective."""
    holders = holders or {}
    rows = [THREADS_HEADER] + [
        (
            thread_id,
            run_status(snapshot, holders.get(thread_id, "")).text(),
            local_time(snapshot.created_at),
            first_line(turn_objective(cast(PlanExecuteState, snapshot.values)), SNIPPET_CHARS),
        )
        for thread_id, snapshot in runs
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(THREADS_HEADER) - 1)]
    return "\n".join(
        "  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    )
