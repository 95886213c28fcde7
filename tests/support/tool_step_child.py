"""A run of four tool steps in one wave, as a separate process for the crash test.

    python -m tests.support.tool_step_child FOLDER run
        plans `look(n)` for n = 1..4 (one wave); `look(4)` waits until the other three steps'
        results are saved in FOLDER/runs.sqlite, then holds at the gate
        (`tests.support.kill_gates.hold_here`) to be killed there
    python -m tests.support.tool_step_child FOLDER resume
        resumes the run and prints its response and the ids of its executed steps as JSON
    ... FOLDER run acting / ... FOLDER resume acting
        the same with `look` undeclared (it may act): the four steps run one wave each, and
        the run is saved with `durability="sync"`, as the CLI saves it

Every call of `look` is appended to FOLDER/calls.txt first.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path

from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from replan.graphs.plan_execute import build_plan_execute_graph
from replan.tools.effects import declare_effects
from tests.support.fake_models import FakeChatModel, call
from tests.support.kill_gates import hold_here

THREAD = "tool-wave"
CALLS_FILE = "calls.txt"
GATE_FILE = "gate"
LOOK_UPS = 4
SAVED_WAIT_SECONDS = 60.0


def looked_up(folder: Path) -> list[int]:
    """The `look` calls made so far, in order."""
    path = folder / CALLS_FILE
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def _saved_steps(db: Path) -> int:
    """How many executor branches of the thread have their results saved."""
    with sqlite3.connect(db, timeout=30) as connection:
        row = connection.execute(
            "SELECT count(DISTINCT task_id) FROM writes WHERE thread_id = ? "
            "AND channel = 'executed_steps'",
            (THREAD,),
        ).fetchone()
    return int(row[0])


def main(folder: Path, action: str, acting: bool) -> None:
    db = folder / "runs.sqlite"

    @tool
    def look(n: int) -> str:
        """Look thing n up."""
        with (folder / CALLS_FILE).open("a") as calls:
            calls.write(f"{n}\n")
        if action == "run" and n == LOOK_UPS:
            deadline = time.monotonic() + SAVED_WAIT_SECONDS
            while _saved_steps(db) < LOOK_UPS - 1 and time.monotonic() < deadline:
                time.sleep(0.02)
            hold_here(folder / GATE_FILE)
        return f"thing {n}"

    if not acting:
        declare_effects(look, read_only=True)  # look-ups run side by side, in one wave
    steps = [{"tool": "look", "args": {"n": n}} for n in range(1, LOOK_UPS + 1)]
    model = FakeChatModel(
        planner=[call("plan", steps=steps)],
        replanner=[call("respond", response=f"looked up {LOOK_UPS} things")],
    )
    connection = sqlite3.connect(db, check_same_thread=False, timeout=30)
    saver = SqliteSaver(connection)
    graph = build_plan_execute_graph(model, [look], checkpointer=saver)
    config = {"configurable": {"thread_id": THREAD}}
    durability = "sync" if acting else "async"
    if action == "run":
        request = {"messages": [("user", "Look up four things")]}
        graph.invoke(request, config, durability=durability)
        return
    result = graph.invoke(None, config, durability=durability)
    ids = [done["id"] for done in result["executed_steps"]]
    print(json.dumps({"response": result["response"], "ids": ids}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3:] == ["acting"])
