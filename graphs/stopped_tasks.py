"""A stopped run is not a failed one: savers that keep LangGraph's record of a cancelled task
out of the database.

When a run is stopped from outside (Ctrl-C or SIGTERM in the CLI, a client cancelling a run on
a server), LangGraph cancels the tasks still running and, from each one's done callback, saves
the `CancelledError` as that task's error. Nothing awaits that write: it races with the saver's
connection being closed, so a stopped task was recorded, depending on a millisecond, as failed
(`failed at replanner`, error `CancelledError`) or not at all. Left out, a stopped task is what
a killed process leaves: not done, and run again on resume. Everything else such a task wrote
is left out with it (it did not finish). A node that raises `CancelledError` itself fails with
LangGraph's `NodeCancelledError`, which is kept.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Sequence
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.types import ERROR

CANCELLED = (asyncio.CancelledError, concurrent.futures.CancelledError)
S = TypeVar("S", bound=BaseCheckpointSaver[Any])


def is_cancellation(writes: Sequence[tuple[str, Any]]) -> bool:
    """Whether `writes` are those of a task that was cancelled (its error a `CancelledError`)."""
    return any(channel == ERROR and isinstance(value, CANCELLED) for channel, value in writes)


class _LeavesStoppedTasksOut(BaseCheckpointSaver[Any]):
    """Saves a task's writes unless the task was cancelled (`is_cancellation`)."""

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if not is_cancellation(writes):
            await super().aput_writes(config, writes, task_id, task_path)


@functools.cache
def leaving_stopped_tasks_out(saver_class: type[S]) -> type[S]:
    """`saver_class` (an async saver) with the writes of cancelled tasks left unsaved."""
    name = f"{saver_class.__name__}LeavingStoppedTasksOut"
    subclass: type[S] = type(name, (_LeavesStoppedTasksOut, saver_class), {})
    return subclass
