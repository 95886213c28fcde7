"""A run that dies at one exact instant, in-process: after the replanner's writes are saved,
before the checkpoint that folds them in (LangGraph's `next` is then empty, yet the run is not
finished)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from replan.graphs.context import Context
from replan.graphs.persistence import open_checkpointer
from replan.graphs.plan_execute import build_plan_execute_graph

OBJECTIVE = "Pending writes in 3 steps"


class Killed(Exception):
    """Stands in for SIGKILL at one exact instant."""


async def die_after_replanner_writes(
    db: Path | str, thread_id: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, ...]:
    """Run `OBJECTIVE` (task tools given) on `thread_id` in `db` until the replanner's writes
    are saved, then fail the next checkpoint save with `Killed`; the state's `next` then."""
    async with open_checkpointer(db) as saver:
        save_writes, replanned = saver.aput_writes, False

        async def aput_writes(config: Any, writes: Any, task_id: str, *rest: Any) -> None:
            nonlocal replanned
            channels = {channel for channel, _ in writes}
            replanned = replanned or ("plan" in channels and "response" not in channels)
            await save_writes(config, writes, task_id, *rest)

        async def aput(*args: Any) -> Any:
            if replanned:
                raise Killed
            return await AsyncSqliteSaver.aput(saver, *args)

        monkeypatch.setattr(saver, "aput_writes", aput_writes)
        monkeypatch.setattr(saver, "aput", aput)
        graph = build_plan_execute_graph(checkpointer=saver)
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        with pytest.raises(Killed):
            await graph.ainvoke(
                {"messages": [("user", OBJECTIVE)]},
                config,
                context=Context(task_tools="compact"),
                durability="sync",
            )
        return tuple((await graph.aget_state(config)).next)
