"""A library user's process for the actions-once tests: the graph with one acting tool, a
SQLite saver and store (the sync classes, run with `invoke`), against the scripted server.

    python -m tests.support.acting_child DB EFFECTS BASE_URL THREAD [RESUME_JSON]

Without RESUME_JSON it starts (or, when the thread has a checkpoint, resumes) the run; with
it, it answers the waiting interrupt. It prints the run's interrupts or its response as JSON.
A call of `append` with `HOLD_IN` as its text writes `EFFECTS.gate` after its effect and
waits to be killed there.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.sqlite import SqliteStore
from langgraph.types import Command

from replan import Context, build_plan_execute_graph, checkpoint_serializer, idempotency_key
from tests.support.kill_gates import hold_here


def main(db: str, effects: str, base_url: str, thread: str, resume: str | None = None) -> None:
    @tool
    def append(text: str) -> str:
        """Append a line to the log."""
        with Path(effects).open("a") as out:
            out.write(f"append {text} {idempotency_key()}\n")
        if os.environ.get("HOLD_IN") == text:
            hold_here(Path(f"{effects}.gate"))
        return f"append {text} done"

    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False), serde=checkpoint_serializer())
    store = SqliteStore(sqlite3.connect(db, check_same_thread=False, isolation_level=None))
    store.setup()
    graph = build_plan_execute_graph(
        tools=[append], checkpointer=saver, store=store, task_tools="compact"
    )
    config: Any = {"configurable": {"thread_id": thread}}
    started = graph.get_state(config).values
    payload: Any = (
        Command(resume=json.loads(resume))
        if resume
        else None
        if started
        else {"messages": [("user", "Crash test in 1 steps")]}
    )
    result = graph.invoke(payload, config, context=Context(model="m", base_url=base_url))
    paused = [i.value for i in result.get("__interrupt__", [])]
    print(json.dumps({"interrupts": paused, "response": result.get("response", "")}))


if __name__ == "__main__":
    main(*sys.argv[1:])
