"""Child process for the shared-store tests: random task-tool calls on one shared list.

    python -m tests.support.task_store_random_worker STORE SEED COUNT [--hang-in-save GATE]

STORE is a folder or a `postgresql://` URL. Runs COUNT random calls through the real tools
(valid and invalid: unknown IDs, cycles, bad statuses) plus, now and then, an operation that
creates a task and then fails, which must leave no trace. Prints one JSON line per call:
`{"tool": name, "ok": bool, "created": id-or-null}`.

With --hang-in-save GATE, it runs one operation instead (`create_link_delete`, which changes
three tasks) whose save stops half-way (for the folder: after its record is flushed, before any
task file is written; for PostgreSQL: inside the open transaction) at GATE
(`tests.support.kill_gates.hold_here`), so the test can SIGKILL the process at exactly that moment.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from replan.state import FileTaskStore, TaskContext, open_task_store
from replan.state.task_stores import TaskChange
from replan.tools import task_tools
from tests.support.kill_gates import hold_here

STATUSES = ["pending", "in_progress", "completed", "deleted", "done"]


class Refused(Exception):
    """Raised by the operation that must change nothing."""


def create_then_fail(context: TaskContext) -> None:
    context.create("REFUSED: must never be stored")
    raise Refused


def create_link_delete(context: TaskContext) -> None:
    """Add a task, make it wait for #1, and delete #2: three tasks change together."""
    task = context.create("Added by the killed writer")
    context.add_dependency("1", task.id)
    context.delete("2")


def hang_in_save(store: Any, gate: str) -> None:
    """Make the store's first save stop at its most delicate point."""
    if isinstance(store, FileTaskStore):  # after the record is flushed, before any file
        store._write_files = lambda *args, **kwargs: hold_here(Path(gate))
    else:
        original = store._save

        def save(change: TaskChange, context: TaskContext) -> None:
            original(change, context)  # written, not committed
            hold_here(Path(gate))

        store._save = save


def main(where: str, seed: int, count: int, gate: str | None) -> None:
    rng = random.Random(seed)
    store = open_task_store(where)
    if gate:
        hang_in_save(store, gate)
        store.transact(create_link_delete)
        return
    tools = {tool.name: tool for tool in task_tools(store=store)}
    highest = 1

    def some_id() -> str:
        return str(rng.randint(1, highest + 2))

    for number in range(count):
        roll = rng.random()
        created = None
        if roll < 0.05:
            try:
                store.transact(create_then_fail)
            except Refused:
                pass
            print(json.dumps({"tool": "refused", "ok": False, "created": None}), flush=True)
            continue
        if roll < 0.35:
            name, args = "TaskCreate", {"subject": f"w{seed} #{number}", "description": "random"}
        elif roll < 0.55:
            name, args = "TaskUpdate", {"taskId": some_id(), "status": rng.choice(STATUSES)}
        elif roll < 0.8:
            edges = [some_id() for _ in range(rng.randint(1, 2))]
            key = rng.choice(["addBlocks", "addBlockedBy"])
            name, args = "TaskUpdate", {"taskId": some_id(), key: edges}
        elif roll < 0.9:
            name, args = "TaskUpdate", {"taskId": some_id(), "owner": f"w{seed}"}
        elif roll < 0.95:
            name, args = "TaskGet", {"taskId": some_id()}
        else:
            name, args = "TaskList", {}
        call = {"type": "tool_call", "name": name, "args": args, "id": f"c{number}"}
        reply = tools[name].invoke(call)
        ok = reply.status != "error"
        if ok and name == "TaskCreate":
            created = reply.content.split("#", 1)[1].split(" ", 1)[0]
            highest = max(highest, int(created))
        print(json.dumps({"tool": name, "ok": ok, "created": created}), flush=True)


if __name__ == "__main__":
    options = sys.argv[1:]
    gate_value = None
    if "--hang-in-save" in options:
        position = options.index("--hang-in-save")
        gate_value = options[position + 1]
        del options[position : position + 2]
    main(options[0], int(options[1]), int(options[2]), gate_value)
