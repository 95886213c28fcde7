"""What a node's logic yields: `Call`s of runnables (a model turn, the executor's tool loop, a
tool), which the node driver (`replan.graphs.nodes.driver`) invokes in sync or async runs and
sends back; the logic itself is a generator, `Steps`."""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.runnables import Runnable

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """A runnable a node's steps want invoked with `input`; the driver picks sync or async.

    `guard` wraps the invocation (e.g. to turn a model client's errors into replan's own);
    `metered` marks a model turn, whose reply's `usage_metadata` is tallied.
    """

    runnable: Runnable[Any, Any]
    input: Any
    guard: Callable[[], AbstractContextManager[Any]] = field(default=nullcontext)
    metered: bool = False


Steps = Generator[Call, Any, T]
"""A node's logic: yields `Call`s, is sent each call's result (or has its error raised at the
`yield`), returns the node's result."""
