"""The plan stream: typed events a run publishes as it goes, for any client of the graph.

Each event is one chunk of LangGraph's `custom` stream mode, a dict tagged with this schema's
version: `{"replan": PLAN_STREAM_VERSION, "event": kind, "node": ..., "step": ..., ...}`
(docs/graph.md, "Watching a run: the plan stream and `todos`", lists every kind and its
fields). Read it with `graph.stream(..., stream_mode="custom")` (or beside other modes), with no
`subgraphs=True`:
every event is written with the stream writer of the top-level node that runs, even the tool
calls made inside an executor step's own loop (a subgraph, whose own writer reaches only
clients that stream subgraphs). `plan_events` picks them out of a stream.

The node driver (`replan.graphs.nodes.driver`) opens a `publishing` scope around each node it
runs; `publish` writes into the innermost scope of the running context (context variables reach
the tasks and threads a node starts), or straight to the stream outside one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.config import get_stream_writer
from langgraph.errors import GraphInterrupt
from langgraph.types import interrupt

from replan.graphs.graph_state import EXECUTOR, PLANNER
from replan.graphs.plan.scheduling import steps_left
from replan.graphs.plan.tool_steps import RESULT_CHARS, first_line
from replan.state.usage import total_tally

PLAN_STREAM_VERSION = 1
"""The version of the events' schema; a change that drops or renames a field raises it."""
STREAM_KEY = "replan"
"""The key that marks a custom stream chunk as a plan-stream event (its value: the version)."""

EventKind = Literal[
    "node_started",
    "node_finished",
    "plan",
    "step_started",
    "step_finished",
    "tool_call",
    "tool_result",
    "text_calls",
    "decision_fallback",
    "pause",
    "answer",
]
EVENT_KINDS: tuple[EventKind, ...] = EventKind.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class _Scope:
    write: Callable[[Any], None]
    node: str
    step: int | None


_SCOPE: ContextVar[_Scope | None] = ContextVar("replan_plan_stream", default=None)


def _stream_writer() -> Callable[[Any], None]:
    try:
        return get_stream_writer()
    except RuntimeError:  # outside a graph run: nobody is listening
        return lambda _: None


@contextmanager
def publishing(node: str, step: int | None = None) -> Iterator[bool]:
    """Events published while the block runs go to this node's stream writer, marked with the
    node and, for an executor branch, its step id; inside another node's scope (a node of an
    executor step's own loop), they stay in that one. Yields whether this scope is the
    outermost, i.e. a node of the graph itself."""
    if _SCOPE.get() is not None:
        yield False
        return
    token = _SCOPE.set(_Scope(_stream_writer(), node, step))
    try:
        yield True
    finally:
        _SCOPE.reset(token)


def publish(event: EventKind, node: str = "", **fields: Any) -> None:
    """Write one event of kind `event` (with `fields`) to the plan stream."""
    scope = _SCOPE.get()
    write = scope.write if scope is not None else _stream_writer()
    chunk: dict[str, Any] = {STREAM_KEY: PLAN_STREAM_VERSION, "event": event}
    chunk["node"] = node or (scope.node if scope is not None else "")
    if scope is not None and scope.step is not None and "step" not in fields:
        chunk["step"] = scope.step
    write({**chunk, **fields})


def paused(value: Any, node: str = "") -> Any:
    """`interrupt(value)`, publishing a `pause` event (with `value`, the question asked) when
    the run actually pauses; a resumed run gets the answer without an event."""
    try:
        return interrupt(value)
    except GraphInterrupt:
        publish("pause", node, request=value)
        raise


def is_plan_event(chunk: Any) -> bool:
    """Whether a `custom` stream chunk is a plan-stream event."""
    return isinstance(chunk, Mapping) and chunk.get(STREAM_KEY) == PLAN_STREAM_VERSION


def plan_events(chunks: Iterator[Any]) -> Iterator[dict[str, Any]]:
    """The plan-stream events among `custom` stream chunks."""
    return (dict(chunk) for chunk in chunks if is_plan_event(chunk))


def plan_view(plan: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Planned steps as a `plan` event shows them: id, text, dependencies (and tool, also of
    a deferred step)."""
    steps = []
    for step in plan:
        shown = {"id": step["id"], "text": step["step"], "depends_on": list(step["depends_on"])}
        if tool := step.get("tool") or step.get("deferred"):
            shown["tool"] = tool
        steps.append(shown)
    return steps


def tokens_of(tally: Mapping[str, Any]) -> dict[str, int]:
    """A usage tally as events show tokens: model calls, input (of which cached), output."""
    return {key: int(tally.get(key, 0)) for key in ("calls", "input", "cached", "output")}


def announce_start(node: str, state: Mapping[str, Any]) -> None:
    """A node of the driver starts: `step_started` for an executor branch, else
    `node_started`."""
    step = state.get("step") if node == EXECUTOR else None
    if isinstance(step, Mapping):
        tool = {"tool": step["tool"]} if "tool" in step else {}
        publish("step_started", text=step["step"], **tool)
    else:
        publish("node_started")


def announce_end(node: str, state: Mapping[str, Any], update: Any, seconds: float) -> None:
    """A node of the driver ends with `update`: what it did (`step_finished` with the step's
    outcome, a new or revised `plan`), its time and the tokens of the model calls its update
    counts (an executor step's own loop's too)."""
    update = update if isinstance(update, Mapping) else {}
    tokens = tokens_of(total_tally(update.get("usage")))
    spent: dict[str, Any] = {"seconds": round(seconds, 3), "tokens": tokens}
    if node == EXECUTOR:
        done = (update.get("executed_steps") or [{}])[-1]
        summary = first_line(str(done.get("result", "")), RESULT_CHARS)
        publish("step_finished", status=done.get("status", "done"), summary=summary, **spent)
        return
    if update.get("plan") is not None and not update.get("response"):
        plan, before = update["plan"], steps_left(state)  # type: ignore[arg-type]
        if node == PLANNER or plan_view(plan) != plan_view(before):
            old, new = {s["id"] for s in before}, {s["id"] for s in plan}
            change: dict[str, Any] = {"added": sorted(new - old), "dropped": sorted(old - new)}
            publish("plan", steps=plan_view(plan), revised=node != PLANNER, **change)
    publish("node_finished", **spent)
