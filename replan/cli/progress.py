"""Live progress of a run on stderr: what each running node is doing, as it happens.

`ProgressPrinter` reads the graph's stream (`astream(..., stream_mode=["updates", "tasks",
"custom"], subgraphs=True)`) and the model requests' retries (`model_retry`, given to
`replan.graphs.model.http_client.model_retries_reported`), and keeps one *lane* per running
node: the planner, each executor step (several at once when a plan runs steps side by side),
the replanner, the answer. A lane shows its tool calls with short arguments, task-list changes,
model retries ("HTTP 500, retrying in 2 s"), how long it has waited for the model, and its
elapsed time; a note says when the run left its way of asking for decisions (the server
refused it, or the model's replies kept carrying no decision).
The tokens used so far (and their cost, with a price) come from the `usage` of the nodes'
updates: each finished node's, plus the model turns of the steps still running.

The lanes are drawn by a display (`replan.cli.display`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Overwrite

from replan.cli.display import Display, Lane
from replan.cli.pricing import Pricing, cost, dollars_text
from replan.cli.summary import fallback_line
from replan.graphs.graph_state import ANSWER, MODEL_NODES, ExecutedStep, PlannedStep
from replan.graphs.model.http_client import ModelRetry
from replan.graphs.plan.tool_steps import RESULT_CHARS, first_line, format_call, tool_step_line
from replan.graphs.plan.views import format_plan
from replan.graphs.plan_stream import is_plan_event
from replan.state import Task, TaskContext
from replan.state.usage import (
    RunUsage,
    add_tallies,
    empty_tally,
    merge_usage,
    tally_text,
    total_tally,
)
from replan.tools.task_state import as_task_context, update_task_context

ARGS_CHARS = 80


def short_call(name: str, args: dict[str, Any]) -> str:
    """`Name(key=value, ...)` cut to `ARGS_CHARS`."""
    call = format_call(name, args)
    return call if len(call) <= ARGS_CHARS else call[: ARGS_CHARS - 2] + "…)"


def task_changes(before: TaskContext | None, after: TaskContext) -> list[str]:
    """What changed in the task list, one short line per task."""
    old: dict[str, Task] = {task.id: task for task in (before.tasks if before else [])}
    new = {task.id: task for task in after.tasks}
    lines = []
    for task in after.sorted_tasks():
        was = old.get(task.id)
        if was is None:
            lines.append(f"task #{task.id} created: {task.subject}")
        elif was.status != task.status:
            lines.append(f"task #{task.id} {was.status} → {task.status}: {task.subject}")
        elif was != task:
            lines.append(f"task #{task.id} updated: {task.subject}")
    lines += [f"task #{tid} deleted: {task.subject}" for tid, task in old.items() if tid not in new]
    return lines


def _step_line(done: ExecutedStep, *, elapsed: str = "", note: str = "") -> str:
    """`Step N done in 1.2 s: first line of the result` (or unfinished, failed), then `note`;
    a tool step as `Step N: area(room="A") → 12.5` (its call and result, `tool_step_line`)."""
    if "tool" in done:
        return f"Step {done.get('id')}: {tool_step_line(done)}{note}"
    result = first_line(done["result"], RESULT_CHARS)
    how = f" in {elapsed}" if elapsed else ""
    return f"Step {done.get('id')} {done.get('status', 'done')}{how}{note}: {result}"


def _publishes(lane: Lane, event: dict[str, Any]) -> bool:
    """Whether `event` of the plan stream comes from the node or step `lane` shows."""
    if "step" in event:
        return lane.step_id == event["step"]
    return lane.step_id is None and lane.label == event.get("node")


def _updates(update: Any) -> list[dict[str, Any]]:
    """A node's update as a list of dicts (a node may return several, e.g. `ToolNode`, or
    none: a `Command` that only routes)."""
    if update is None:
        return [{}]
    if isinstance(update, dict):  # a value that bypasses its channel's reducer, as written
        return [{k: v.value if isinstance(v, Overwrite) else v for k, v in update.items()}]
    if isinstance(update, list | tuple):
        return [item for item in update if isinstance(item, dict)]
    return []


class ProgressPrinter:
    """Turns a run's stream events and model retries into lanes on a `Display`.

    `usage` is what the run had used before this stream (a resumed run's state, which includes
    the saved writes that a resumed stream replays as cached updates), `pricing` turns tokens
    into dollars, `plan` is the steps it had still to do (a resumed run's: a replanner that
    keeps them is not a revision).
    """

    def __init__(
        self,
        display: Display,
        clock: Callable[[], float] = time.monotonic,
        *,
        usage: RunUsage | None = None,
        pricing: Pricing | None = None,
        plain_answer: bool = False,
        plan: list[PlannedStep] | None = None,
    ) -> None:
        self.display = display
        self.clock = clock
        self.lanes: dict[str, Lane] = {}
        self.remaining: list[PlannedStep] = list(plan or [])
        self.started = clock()
        self.usage = usage or RunUsage()
        self.pricing = pricing
        self.settled = ""
        self.plain_answer = plain_answer
        """The run writes its answer after the replanner responds (`Context.answer`)."""
        self.stopped = ""
        """Why the replanner stopped the run short ("" while it has not)."""
        self.retried: dict[str, str] = {}
        """The reason of the last model retry shown, by the lane key it was shown in."""

    def note(self, text: str) -> None:
        """A line about the whole run (e.g. a hint from the command)."""
        self.display.note(text)

    def _open(self) -> list[Lane]:
        return list(self.lanes.values())

    def handle(self, namespace: tuple[str, ...], mode: str, chunk: Any) -> None:
        """Show one `(namespace, mode, chunk)` event of `astream(..., stream_mode=["updates",
        "tasks", "custom"], subgraphs=True)`."""
        if mode == "custom":
            self._custom(chunk)
        elif namespace:
            self._inner(namespace[0], mode, chunk)
        elif mode == "tasks" and "input" in chunk:
            self._task_started(f"{chunk['name']}:{chunk['id']}", chunk["name"], chunk["input"])
        elif mode == "tasks":
            self._task_ended(f"{chunk['name']}:{chunk['id']}", chunk)
        elif mode == "updates":
            saved = bool(chunk.get("__metadata__", {}).get("cached"))
            for node, update in chunk.items():
                if node in ("__metadata__", "__interrupt__"):
                    continue
                for part in _updates(update):
                    self._node_finished(node, part, saved=saved)

    def _custom(self, chunk: Any) -> None:
        """Events of the plan stream (`replan.graphs.plan_stream`) the lanes show: tool calls
        read from a reply's text, a fallback to another way of asking for decisions."""
        if not is_plan_event(chunk):
            return
        if chunk["event"] == "text_calls":
            self._text_calls(chunk)
        elif chunk["event"] == "decision_fallback":
            self.display.note(fallback_line(chunk["fallback"]))

    def tick(self) -> None:
        """Bring waiting times up to date (call it every `TICK_SECONDS`)."""
        self.display.tick(self._open(), self.clock())

    def model_retry(self, retry: ModelRetry) -> None:
        """A model request of a node is about to be sent again (`model_retries_reported`): one
        line, unless the retry before it, in the same place, was for the same reason (the
        waiting notices go on meanwhile)."""
        key = retry.namespace.split("|")[0]
        lane = self.lanes.get(key)
        if lane is not None:
            lane.waiting_since = None
            lane.wait_for_model(self.clock())
        if self.retried.get(key) == retry.reason and retry.retry > 1:
            return
        self.retried[key] = retry.reason
        text = (
            f"model: {retry.reason}, retrying in {retry.seconds:.2g} s "
            f"(retry {retry.retry} of {retry.retries})"
        )
        if lane is None:
            self.display.note(text)
        else:
            self.display.event(lane, text, self._open())

    def _text_calls(self, event: dict[str, Any]) -> None:
        """Tool calls were read from the text of a reply (`replan.graphs.model.text_calls`), in
        the lane of the node or step that asked."""
        count = event.get("count", 0)
        text = (
            f"↺ {count} tool call{'' if count == 1 else 's'} read from the reply's text: "
            f"{', '.join(event.get('tools', []))}"
        )
        lane = next((lane for lane in self.lanes.values() if _publishes(lane, event)), None)
        if lane is None:
            self.display.note(text)
        else:
            self.display.event(lane, text, self._open())

    def _task_started(self, key: str, node: str, state: dict[str, Any]) -> None:
        now = self.clock()
        if node == "planner":
            lane = Lane("Planning…", now, label="planner")
        elif node == "executor":
            step = state["step"]
            title = f"Step {step['id']}: {step['step']}"
            lane = Lane(title, now, label=f"step {step['id']}", step_id=step["id"])
            lane.tasks = as_task_context(state.get("tasks_context"))
        elif node == "replanner":
            lane = Lane("Reviewing progress…", now, label="replanner")
        elif node == ANSWER:
            lane = Lane("Writing the answer…", now, label=ANSWER)
        else:
            return
        if node in MODEL_NODES:
            lane.wait_for_model(now)
        self.lanes[key] = lane
        self.display.opened(lane, self._open())

    def _task_ended(self, key: str, chunk: dict[str, Any]) -> None:
        lane = self.lanes.pop(key, None)
        if lane is None:
            return
        elapsed = f"{self.clock() - lane.started:.1f} s"
        if chunk.get("error"):  # the run's last line says why
            text = f"{lane.label.capitalize()} failed after {elapsed}."
        elif chunk["name"] == "executor":
            done = (chunk.get("result") or {}).get("executed_steps") or [{"result": ""}]
            text = _step_line(done[-1], elapsed=elapsed)
        else:
            text = ""
        self.display.closed(lane, text, self._open())
        self._show_usage(settled=True)

    def _inner(self, lane_key: str, mode: str, chunk: Any) -> None:
        """Events of a node's subgraph (the executor's tool loop)."""
        lane = self.lanes.get(lane_key)
        if lane is None:
            return
        if mode == "tasks" and chunk["name"] in MODEL_NODES:
            if "input" in chunk:
                lane.wait_for_model(self.clock())
            else:
                lane.waiting_since = None
            return
        if mode != "updates":
            return
        for update in chunk.values():
            for part in _updates(update):
                for text in self._inner_update(lane, part):
                    self.display.event(lane, text, self._open())
                if part.get("usage"):
                    lane.used = add_tallies(lane.used, total_tally(part["usage"]))
                    self._show_usage(settled=False)

    def _inner_update(self, lane: Lane, update: dict[str, Any]) -> list[str]:
        """Tool calls the model asked for, tools that failed, task-list changes."""
        lines = []
        for message in update.get("messages") or []:
            if isinstance(message, AIMessage):
                lines += [f"→ {short_call(c['name'], c['args'])}" for c in message.tool_calls]
            elif isinstance(message, ToolMessage) and message.status == "error":
                reason = first_line(message.text, RESULT_CHARS)
                lines.append(f"✗ {message.name or 'tool'}: {reason}")
        if "tasks_context" in update:  # a whole list, or one task call's change to it
            tasks = update_task_context(lane.tasks, update["tasks_context"])
            lines += task_changes(lane.tasks, tasks)
            lane.tasks = tasks
        return lines

    def _show_plan(self, title: str, plan: list[PlannedStep]) -> None:
        self.remaining = list(plan)
        steps = "\n".join("  " + line for line in format_plan(plan).splitlines())
        self.display.note(f"{title}\n{steps}")

    def usage_text(self) -> str:
        """`Tokens so far: ...`: finished nodes and the model turns of running steps."""
        total = add_tallies(total_tally(self.usage), *(lane.used for lane in self.lanes.values()))
        text = f"Tokens so far: {tally_text(total)}"
        if self.pricing is not None:
            text += f"; cost {dollars_text(cost(total, self.pricing.price), total)}"
        return text

    def _show_usage(self, *, settled: bool) -> None:
        text = self.usage_text()
        if settled and text == self.settled:
            return
        if settled:
            self.settled = text
        self.display.usage(text, settled)

    def _count(self, usage: RunUsage) -> None:
        """A finished node's usage: it now counts instead of its step's running turns."""
        for key in usage.get("steps") or {}:
            for lane in self.lanes.values():
                if str(lane.step_id) == key:
                    lane.used = empty_tally()
        self.usage = merge_usage(self.usage, usage)
        self._show_usage(settled=False)

    def _node_finished(self, node: str, update: dict[str, Any], *, saved: bool) -> None:
        if update.get("usage") and not saved:  # a saved write is in the usage we started from
            self._count(update["usage"])
        if node == "planner" and update.get("plan"):
            self._show_plan("Plan:", update["plan"])
        elif node == "planner" and not update.get("response"):
            self.display.note("Nothing to carry out (the run has no tools): answering directly.")
        elif node == "review_plan":
            self._review_finished(update)
        elif node == "executor":
            for done in update.get("executed_steps", []):
                self.remaining = [s for s in self.remaining if s["id"] != done.get("id")]
                if saved:  # a resumed wave: this step's result was saved before the stop
                    self._saved_step(done)
        elif node == "replanner" and update.get("stop_reason"):  # its answer is written next
            self.stopped = update["stop_reason"]
            self._show_usage(settled=True)
            self.display.note(
                f"Objective not finished ({self.stopped}) after {self._elapsed()}; "
                "writing what the results allow."
            )
        elif node == "replanner" and update.get("response") and self.plain_answer:
            self.display.note(f"Objective met after {self._elapsed()}; writing the answer.")
        elif node == ANSWER and self.stopped:
            self._show_usage(settled=True)
            self.display.note(
                f"Objective not finished ({self.stopped}) after {self._elapsed()}; "
                "the report is below."
            )
        elif node in ("replanner", ANSWER) and update.get("response"):
            self._show_usage(settled=True)
            self.display.note(f"Objective done in {self._elapsed()}; final answer below.")
        elif node == "replanner" and update.get("plan") != self.remaining:
            self._show_plan("Plan revised:", update["plan"])

    def _saved_step(self, done: ExecutedStep) -> None:
        """A step of a resumed wave that does not run again: its result was saved."""
        text = _step_line(done, note=" (saved before the stop)")
        key = next((k for k, lane in self.lanes.items() if lane.step_id == done.get("id")), None)
        if key is None:
            self.display.note(text)
        else:
            self.display.closed(self.lanes.pop(key), text, self._open())
        self._show_usage(settled=True)

    def _elapsed(self) -> str:
        return f"{self.clock() - self.started:.1f} s"

    def _review_finished(self, update: dict[str, Any]) -> None:
        if "plan" in update:
            self._show_plan("Plan edited:", update["plan"])
        else:
            self.display.note("Plan rejected." if update.get("response") else "Plan approved.")
