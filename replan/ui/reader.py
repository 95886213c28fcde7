"""What `replan ui` shows of the runs in a database, read from their checkpoints only.

The page follows a run in any process (the CLI, `langgraph dev`, Aegra) by reading what it
saves: each node's writes are saved as it ends (an executor branch's too, before its wave's
checkpoint folds them in), and an executor step's own loop saves its turns under the step's
namespace (`executor:<task id>`), so a step's calls show while it runs. Stream events are never
stored, so nothing here reads them.

`RunReader` keeps one read-only saver on its own event loop (the page's requests come from the
HTTP server's threads) and remembers what never changes: each checkpoint of a thread's history
is read once, a finished step's calls once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Overwrite, StateSnapshot

from replan.cli.stored_runs import reading_graph, run_start, thread_config
from replan.cli.summary import summarize
from replan.graphs.graph_state import EXECUTOR
from replan.graphs.persistence import open_checkpointer, stored_thread_ids
from replan.graphs.plan.tool_steps import RESULT_CHARS, first_line
from replan.graphs.thread_leases import thread_lease

T = TypeVar("T")
READ_SECONDS = 30.0
"""The longest one read of the database may take before the page is told it failed."""


def calls_of(messages: list[Any]) -> list[dict[str, Any]]:
    """The tool calls an executor loop's `messages` hold, each with its result once it has one."""
    calls: dict[str, dict[str, Any]] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                calls[str(call["id"])] = {"name": call["name"], "args": call["args"]}
        elif isinstance(message, ToolMessage) and message.tool_call_id in calls:
            calls[message.tool_call_id]["result"] = first_line(message.text, RESULT_CHARS)
            calls[message.tool_call_id]["error"] = message.status == "error"
    return list(calls.values())


def _seconds(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    return round((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds(), 3)


@dataclass
class _History:
    """What a thread's history has told so far: each step's dependencies (from every plan
    written), the executor task that carried it out, and the time of each node's run."""

    read: set[str] = field(default_factory=set)
    depends_on: dict[int, list[int]] = field(default_factory=dict)
    tasks: dict[int, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    step_seconds: dict[int, float] = field(default_factory=dict)
    calls: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def learn(self, snapshot: StateSnapshot, ended_at: str | None) -> None:
        """Take in what ran from `snapshot` (its tasks' writes) until `ended_at`."""
        took = _seconds(snapshot.created_at, ended_at)
        for task in snapshot.tasks:
            result = _written(task.result)
            for step in result.get("plan") or []:
                self.depends_on[step["id"]] = list(step["depends_on"])
            for done in result.get("executed_steps") or []:
                if "id" in done:
                    self.tasks[done["id"]] = task.id
                    if took is not None:
                        self.step_seconds[done["id"]] = took
        ran = {task.name for task in snapshot.tasks if task.result is not None}
        for name in ran if took is not None else ():
            self.seconds[name] = round(self.seconds.get(name, 0.0) + (took or 0.0), 3)
        for step in snapshot.values.get("plan") or []:
            self.depends_on.setdefault(step["id"], list(step["depends_on"]))


class RunReader:
    """Reads one database's runs for the page (see the module docstring)."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="replan-ui-reader", daemon=True).start()
        self.stack = AsyncExitStack()
        self.saver: BaseCheckpointSaver[str] = self.run(self._open())
        self.histories: dict[str, _History] = {}

    async def _open(self) -> BaseCheckpointSaver[str]:
        return await self.stack.enter_async_context(open_checkpointer(self.db, read_only=True))

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` on the reader's loop and wait for it."""
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(READ_SECONDS)

    def close(self) -> None:
        self.run(self.stack.aclose())
        self.loop.call_soon_threadsafe(self.loop.stop)

    async def _summary(self, thread_id: str, snapshot: StateSnapshot) -> dict[str, Any]:
        lease = await thread_lease(self.saver, thread_id)
        holder = lease.who() if lease and lease.live() else ""
        started = await run_start(self.saver, thread_id, snapshot)
        return summarize(thread_id, snapshot, started_at=started, holder=holder)

    async def threads(self) -> list[dict[str, Any]]:
        """Every thread, most recently updated first: status, objective, tokens, when."""
        graph = reading_graph(self.saver)
        listed = []
        for thread_id in await stored_thread_ids(self.saver):
            snapshot = await graph.aget_state(thread_config(thread_id))
            summary = await self._summary(thread_id, snapshot)
            keys = ("thread_id", "status", "stop_reason", "objective", "turn", "usage")
            listed.append({key: summary[key] for key in keys} | _times(summary))
        return listed

    async def thread(self, thread_id: str) -> dict[str, Any] | None:
        """One thread as the page draws it (None when there is no such thread): its summary
        (`replan show --json`), its steps as a graph with live status, each step's calls, and
        the time per node."""
        graph = reading_graph(self.saver)
        snapshot = await graph.aget_state(thread_config(thread_id))
        if snapshot.metadata is None:
            return None
        summary = await self._summary(thread_id, snapshot)
        history = await self._history(thread_id)
        steps = await self._steps(thread_id, snapshot, history)
        return {**summary, "steps": steps, "seconds": history.seconds, "checkpoint": _id(snapshot)}

    async def _history(self, thread_id: str) -> _History:
        """The thread's history, read up to the checkpoints read before."""
        history = self.histories.setdefault(thread_id, _History())
        graph = reading_graph(self.saver)
        new: list[StateSnapshot] = []
        async for snapshot in graph.aget_state_history(thread_config(thread_id)):
            if _id(snapshot) in history.read:
                break
            new.append(snapshot)
        for index in range(len(new) - 1, -1, -1):  # oldest first
            newer = new[index - 1] if index else None
            history.learn(new[index], newer.created_at if newer else None)
            if newer is not None:  # the newest may still gain writes: read it again next time
                history.read.add(_id(new[index]))
        return history

    async def _steps(
        self, thread_id: str, snapshot: StateSnapshot, history: _History
    ) -> list[dict[str, Any]]:
        """The turn's steps, carried out and planned, each with its status, dependencies,
        calls and result."""
        values = snapshot.values
        done = {d["id"]: d for d in values.get("executed_steps", []) if "id" in d}
        for task in snapshot.tasks:  # steps of the running wave that have ended
            result = _written(task.result)
            for step in result.get("executed_steps") or []:
                done.setdefault(step.get("id", -1), step)
        running = await self._running(thread_id, snapshot)
        steps = []
        for step_id, step in done.items():
            calls = await self._step_calls(thread_id, history.tasks.get(step_id), step)
            steps.append(_shown(step_id, step, step.get("status", "done"), history, calls))
        for step in values.get("plan") or []:
            if step["id"] in done:
                continue
            live = running.get(step["step"])
            status = "running" if live is not None else "pending"
            steps.append(_shown(step["id"], step, status, history, live or []))
        return steps

    async def _running(self, thread_id: str, snapshot: StateSnapshot) -> dict[str, list[Any]]:
        """The steps running now, by their text, with the calls their loops have saved."""
        running: dict[str, list[Any]] = {}
        for task in snapshot.tasks:
            if task.name != EXECUTOR or task.result is not None:
                continue
            saved = await self._inner(thread_id, task.id)
            if saved is not None:
                running[str(saved.get("step", ""))] = calls_of(saved.get("messages") or [])
        todos = snapshot.values.get("todos") or []
        for todo in todos:  # a tool step, or a text step whose loop has not saved yet
            if todo["status"] == "in_progress" and snapshot.next:
                running.setdefault(todo["content"], [])
        return running

    async def _inner(self, thread_id: str, task_id: str) -> dict[str, Any] | None:
        """The channel values an executor task's own loop saved last, if it saved any."""
        config: RunnableConfig = {
            "configurable": {"thread_id": thread_id, "checkpoint_ns": f"{EXECUTOR}:{task_id}"}
        }
        saved = await self.saver.aget_tuple(config)
        return dict(saved.checkpoint["channel_values"]) if saved else None

    async def _step_calls(
        self, thread_id: str, task_id: str | None, step: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        """A carried-out step's calls: a tool step's one call, a text step's loop's calls."""
        if "tool" in step:
            error = step.get("status") == "failed"
            result = first_line(str(step.get("result", "")), RESULT_CHARS)
            return [{"name": step["tool"], "args": step.get("args", {}), "result": result,
                     "error": error}]  # fmt: skip
        if task_id is None:
            return []
        history = self.histories[thread_id]
        if task_id not in history.calls:
            saved = await self._inner(thread_id, task_id)
            history.calls[task_id] = calls_of((saved or {}).get("messages") or [])
        return history.calls[task_id]


def _written(result: Any) -> dict[str, Any]:
    """A task's writes by channel, each value as written (a value that replaced its channel's,
    `Overwrite`, as the value itself)."""
    if not isinstance(result, Mapping):
        return {}
    return {key: value.value if isinstance(value, Overwrite) else value
            for key, value in result.items()}  # fmt: skip


def _id(snapshot: StateSnapshot) -> str:
    return str((snapshot.config.get("configurable") or {}).get("checkpoint_id", ""))


def _times(summary: Mapping[str, Any]) -> dict[str, Any]:
    return {"started_at": summary["started_at"], "updated_at": summary["updated_at"]}


def _shown(
    step_id: int,
    step: Mapping[str, Any],
    status: str,
    history: _History,
    calls: list[dict[str, Any]],
) -> dict[str, Any]:
    """One step as the page draws it."""
    return {
        "id": step_id,
        "text": step["step"],
        "status": status,
        "depends_on": history.depends_on.get(step_id, list(step.get("depends_on", []))),
        "result": step.get("result"),
        "calls": calls,
        "seconds": history.step_seconds.get(step_id),
    }
