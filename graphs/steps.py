"""Nodes written once, run by sync and async graphs alike.

A node's logic is a generator of `Call`s (a runnable and its input: a model turn, the
executor's inner graph); an error a call raises is raised inside the generator at its `yield`.
`dual_node` drives it with `invoke` in sync runs and `ainvoke` in async runs, so
`graph.invoke` / `graph.stream` and `ainvoke` / `astream` behave the same.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from langchain_core.runnables import Runnable, RunnableLambda
from langgraph.runtime import Runtime, get_runtime

from replan.graphs.context import Context

T = TypeVar("T")
S = TypeVar("S")


@dataclass(frozen=True)
class Call:
    """A runnable a node's steps want invoked with `input`; the driver picks sync or async.

    `guard` wraps the invocation (e.g. to turn a model client's errors into replan's own).
    """

    runnable: Runnable[Any, Any]
    input: Any
    guard: Callable[[], AbstractContextManager[Any]] = field(default=nullcontext)


Steps = Generator[Call, Any, T]
"""A node's logic: yields `Call`s, is sent each call's result (or has its error raised at the
`yield`), returns the node's result."""


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


def drive(steps: Steps[T]) -> T:
    """Run `steps` to the end, invoking each call synchronously."""
    step = _send(steps, None)
    while isinstance(step, Call):
        try:
            with step.guard():
                result = step.runnable.invoke(step.input)
        except Exception as error:
            step = _throw(steps, error)
        else:
            step = _send(steps, result)
    return step.value


async def adrive(steps: Steps[T]) -> T:
    """Run `steps` to the end, awaiting each call."""
    step = _send(steps, None)
    while isinstance(step, Call):
        try:
            with step.guard():
                result = await step.runnable.ainvoke(step.input)
        except Exception as error:
            step = _throw(steps, error)
        else:
            step = _send(steps, result)
    return step.value


def dual_node(steps: Callable[[S, Runtime[Context]], Steps[T]]) -> RunnableLambda[S, T]:
    """A graph node running `steps` in sync runs (`invoke`) and async runs (`ainvoke`)."""

    def run(state: S) -> T:
        return drive(steps(state, get_runtime(Context)))

    async def arun(state: S) -> T:
        return await adrive(steps(state, get_runtime(Context)))

    return RunnableLambda(run, afunc=arun, name=steps.__name__)
