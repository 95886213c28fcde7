"""Nodes written once, run by sync and async graphs alike.

A node's logic is a generator of `Call`s (a runnable and its input: a model turn, the
executor's inner graph); an error a call raises is raised inside the generator at its `yield`.
`dual_node` drives it with `invoke` in sync runs and `ainvoke` in async runs, so
`graph.invoke` / `graph.stream` and `ainvoke` / `astream` behave the same.

A call marked `metered` is a model turn: the driver tallies the usage its reply reports
(`replan.state.usage`), and `dual_node` adds the node's tally to the node's update as `usage`,
under the node's name, so every model call is counted where it was made.

A node, written once (docs/CONTRACTS.md, "Adding a node"):

    def greet(state: PlanExecuteState, context: Context) -> Steps[dict[str, Any]]:
        reply = yield from ask_model(model, [HumanMessage("Say hello")], context)
        return {"response": reply.text}  # its usage is added under "greet"

    builder.add_node("greet", dual_node(greet))

Why generators rather than twin sync and async functions: each node's logic exists once, a
failing call is handled where it was made (`try` around the `yield`), and what a call becomes
(a LangGraph `@task`, say) is decided here for every node.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from langchain_core.runnables import RunnableLambda
from langgraph.errors import GraphInterrupt
from langgraph.runtime import get_runtime

from replan.graphs.calls import Call, Steps
from replan.graphs.context import Context, run_context
from replan.graphs.plan_stream import announce_end, announce_start, publishing
from replan.state.usage import Tally, add_tallies, call_tally, empty_tally, node_usage

T = TypeVar("T")
S = TypeVar("S")


@dataclass(frozen=True)
class _Finished(Generic[T]):
    value: T


def _send(steps: Steps[T], result: Any) -> Call | _Finished[T]:
    """Resume `steps` with `result`: the next call it wants, or its return value."""
    try:
        return steps.send(result)
    except StopIteration as stop:
        return _Finished(stop.value)


def _throw(steps: Steps[T], error: Exception) -> Call | _Finished[T]:
    """Resume `steps` with the error its call raised: what it wants next if it handles the
    error, else the error goes on up."""
    try:
        return steps.throw(error)
    except StopIteration as stop:
        return _Finished(stop.value)


class Meter:
    """The usage of the metered calls a driver made."""

    def __init__(self) -> None:
        self.tally = empty_tally()

    def record(self, call: Call, result: Any) -> None:
        """Count `result` when `call` is a model turn."""
        if call.metered:
            usage = getattr(result, "usage_metadata", None)
            self.tally = add_tallies(self.tally, call_tally(usage))


def _distinct(error: Exception) -> Exception:
    """`error`, with each interrupt once when it is a pause: a tool's `interrupt` inside a call
    made as a LangGraph task reaches the node twice, from the task and from its caller."""
    if not isinstance(error, GraphInterrupt) or not error.args:
        return error
    interrupts = {interrupt.id: interrupt for interrupt in error.args[0]}
    return GraphInterrupt(tuple(interrupts.values()))


def drive(steps: Steps[T], meter: Meter | None = None) -> T:
    """Run `steps` to the end, invoking each call synchronously."""
    step = _send(steps, None)
    while isinstance(step, Call):
        try:
            with step.guard():
                result = step.runnable.invoke(step.input)
        except Exception as error:
            step = _throw(steps, _distinct(error))
            continue
        if meter is not None:
            meter.record(step, result)
        step = _send(steps, result)
    return step.value


async def adrive(steps: Steps[T], meter: Meter | None = None) -> T:
    """Run `steps` to the end, awaiting each call."""
    step = _send(steps, None)
    while isinstance(step, Call):
        try:
            with step.guard():
                result = await step.runnable.ainvoke(step.input)
        except Exception as error:
            step = _throw(steps, _distinct(error))
            continue
        if meter is not None:
            meter.record(step, result)
        step = _send(steps, result)
    return step.value


def _with_usage(node: str, update: T, tally: Tally) -> T:
    """`update` with the node's model usage added, when it made model calls."""
    if not tally["calls"] or not isinstance(update, dict):
        return update
    return cast(T, {**update, "usage": node_usage(node, tally)})


def _step_id(state: Any) -> int | None:
    """The id of the step an executor branch's input carries (None for other nodes)."""
    step = state.get("step") if isinstance(state, Mapping) else None
    return step.get("id") if isinstance(step, Mapping) else None


def dual_node(
    steps: Callable[[S, Context], Steps[T]],
    *,
    saves_settings: bool = False,
    after: Callable[[S, T, Context], T] | None = None,
) -> RunnableLambda[S, T]:
    """A graph node running `steps` in sync runs (`invoke`) and async runs (`ainvoke`), with the
    run's settings (`run_context`: the saved ones, changed by the fields the caller gave); its
    update carries the usage of its model calls (see the module docstring), what `after` adds
    to it and, for a node that `saves_settings`, the settings when the run had none saved or
    the caller changed some. The node publishes its start, its end and what it did on the plan
    stream (`replan.graphs.plan_stream`), inside a scope that its calls publish in too."""
    node = steps.__name__

    def saved(state: S) -> Any:
        return state.get("settings") if isinstance(state, Mapping) else None

    def prepared(state: S, outermost: bool) -> Context:
        if outermost:
            announce_start(node, cast(Mapping[str, Any], state))
        return run_context(get_runtime(Context).context, saved(state))

    def finished(
        state: S, update: T, meter: Meter, context: Context, began: float, outermost: bool
    ) -> T:
        update = _with_usage(node, update, meter.tally)
        if after is not None:
            update = after(state, update, context)
        if saves_settings and isinstance(update, dict) and context.settings() != saved(state):
            update = cast(T, {**update, "settings": context.settings()})
        if outermost:
            seconds = time.monotonic() - began
            announce_end(node, cast(Mapping[str, Any], state), update, seconds)
        return update

    def run(state: S) -> T:
        with publishing(node, _step_id(state)) as outermost:
            began, meter = time.monotonic(), Meter()
            context = prepared(state, outermost)
            update = drive(steps(state, context), meter)
            return finished(state, update, meter, context, began, outermost)

    async def arun(state: S) -> T:
        with publishing(node, _step_id(state)) as outermost:
            began, meter = time.monotonic(), Meter()
            context = prepared(state, outermost)
            update = await adrive(steps(state, context), meter)
            return finished(state, update, meter, context, began, outermost)

    return RunnableLambda(run, afunc=arun, name=steps.__name__)
