"""What a person sees of a plan–execute run: live progress lines and stored-run summaries.

`ProgressPrinter` turns the graph's `stream_mode=["updates", "tasks"]` events into short lines
(the plan, each step of a wave as it starts and ends, replans, approvals). `run_status`,
`describe_run` and `run_line` summarise a stored run from its `StateSnapshot`.
"""

from __future__ import annotations

from typing import Any, TextIO, cast

from langgraph.types import StateSnapshot

from replan.graphs.state import (
    PlanExecuteState,
    PlannedStep,
    format_executed_steps,
    format_plan,
    objective_text,
    steps_left,
)
from replan.state import TaskContext, format_task_list

RESULT_CHARS = 160
SNIPPET_CHARS = 60


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _first_line(text: str, limit: int) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


class ProgressPrinter:
    """Prints stream events of a run as they arrive.

    The steps of a wave run side by side: each prints a `Step N: text` line when the wave
    begins and a `Step N done` (or `unfinished`, `failed`) line with the start of its result
    as soon as it ends, so their lines interleave. A resumed wave starts all its steps again
    on screen, but those whose results were saved before the stop say so and do not run.
    """

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.remaining: list[PlannedStep] = []

    def _say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def _show_plan(self, title: str, plan: list[PlannedStep]) -> None:
        self.remaining = list(plan)
        self._say(f"{title}\n{_indent(format_plan(plan))}")

    def handle(self, mode: str, chunk: Any) -> None:
        """Print one `(mode, chunk)` event of `astream(..., stream_mode=["updates", "tasks"])`."""
        if mode == "tasks" and "input" in chunk:
            self._task_started(chunk["name"], chunk["input"])
        elif mode == "updates":
            saved = bool(chunk.get("__metadata__", {}).get("cached"))
            for node, update in chunk.items():
                if node not in ("__interrupt__", "__metadata__"):
                    self._node_finished(node, update, saved=saved)

    def _task_started(self, node: str, task_input: dict[str, Any]) -> None:
        if node == "planner":
            self._say("Planning…")
        elif node == "executor":
            step = task_input["step"]
            self._say(f"Step {step['id']}: {step['step']}")

    def _node_finished(self, node: str, update: dict[str, Any] | None, *, saved: bool) -> None:
        update = update or {}
        if node == "planner":
            self._show_plan("Plan:", update["plan"])
        elif node == "review_plan":
            self._review_finished(update)
        elif node == "executor":
            when = " (saved before the stop)" if saved else ""
            for done in update["executed_steps"]:
                result = _first_line(done["result"], RESULT_CHARS)
                self._say(f"Step {done.get('id')} {done.get('status', 'done')}{when}: {result}")
                self.remaining = [s for s in self.remaining if s["id"] != done.get("id")]
        elif node == "replanner" and update.get("stop_reason"):
            self._say(f"Stopped ({update['stop_reason']}) before the objective was met.")
        elif node == "replanner" and update.get("response"):
            self._say("Objective done; final answer below.")
        elif node == "replanner" and update.get("plan") != self.remaining:
            self._show_plan("Plan revised:", update["plan"])

    def _review_finished(self, update: dict[str, Any]) -> None:
        if "plan" in update:
            self._show_plan("Plan edited:", update["plan"])
        else:
            self._say("Plan rejected." if update.get("response") else "Plan approved.")


def is_finished(snapshot: StateSnapshot) -> bool:
    """Whether the run has nothing left to do.

    Not `not snapshot.next`: `next` leaves out tasks whose writes were saved but not yet folded
    into a checkpoint (a process killed in between), and such a run must still be resumed.
    """
    return not snapshot.tasks


def run_status(snapshot: StateSnapshot) -> str:
    """finished / waiting for approval / failed at X / interrupted at X (or after X)."""
    if snapshot.interrupts:
        return "waiting for approval"
    if is_finished(snapshot):
        return "finished"
    failed = [task.name for task in snapshot.tasks if task.error]
    if failed:
        return f"failed at {', '.join(failed)}"
    if snapshot.next:
        return f"interrupted at {', '.join(snapshot.next)}"
    return f"interrupted after {', '.join(task.name for task in snapshot.tasks)}"


def describe_run(thread_id: str, snapshot: StateSnapshot) -> str:
    """A multi-line report of a stored run: status, objective, steps, plan, tasks, answer."""
    values = cast(PlanExecuteState, snapshot.values)
    tasks = values.get("tasks_context") or TaskContext()
    parts = [
        f"Thread: {thread_id}",
        f"Status: {run_status(snapshot)}",
        f"Objective:\n{_indent(objective_text(values.get('messages', [])))}",
        f"Executed steps:\n{_indent(format_executed_steps(values.get('executed_steps', [])))}",
        f"Plan (steps still to do):\n{_indent(format_plan(steps_left(values)))}",
        f"Tasks:\n{_indent(format_task_list(tasks))}",
    ]
    if values.get("response"):
        parts.append(f"Answer:\n{_indent(values['response'])}")
    return "\n".join(parts)


def run_line(thread_id: str, snapshot: StateSnapshot) -> str:
    """One line for a run list: thread id, status and the start of the objective."""
    objective = _first_line(objective_text(snapshot.values.get("messages", [])), SNIPPET_CHARS)
    return f"{thread_id}\t{run_status(snapshot)}\t{objective}"
