"""Child process for the file store tests: uses one task folder through the real tools.

    python -m tests.task_store_worker hammer FOLDER NAME COUNT
    python -m tests.task_store_worker hold FOLDER before|after FILE GATE TOOL ARGS_JSON

`hammer` creates COUNT tasks owned by NAME through TaskCreate and TaskUpdate, printing each
new ID. `hold` makes one tool call and, while that call's change is in progress (its journal
exists), stops just before or just after FILE is renamed into place, at the gate
(`tests.kill_gates.hold_here`), to be killed there.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

from replan.state.task_store import JOURNAL_FILE
from replan.tools import task_tools
from tests.kill_gates import hold_here


def hammer(folder: str, name: str, count: str) -> None:
    create, _, update, _ = task_tools(store=folder)
    for number in range(int(count)):
        reply = create.invoke({"subject": f"{name} {number}", "description": name})
        task_id = reply.split("#", 1)[1].split(" ", 1)[0]
        update.invoke({"taskId": task_id, "owner": name})
        print(task_id, flush=True)


def hold(folder: str, when: str, file: str, gate: str, tool: str, args: str) -> None:
    journal, real_replace = Path(folder) / JOURNAL_FILE, os.replace

    def replace(source: Any, target: Any) -> None:
        at_file = Path(target).name == file
        if at_file and when == "before" and journal.exists():
            hold_here(Path(gate))
        real_replace(source, target)
        if at_file and when == "after" and journal.exists():
            hold_here(Path(gate))

    tools = {t.name: t for t in task_tools(store=folder)}
    with mock.patch.object(os, "replace", replace):  # the store's atomic writes rename here
        print(tools[tool].invoke(json.loads(args)))
    sys.exit(f"the call finished without passing {when} {file}")


if __name__ == "__main__":
    commands: dict[str, Callable[..., None]] = {"hammer": hammer, "hold": hold}
    commands[sys.argv[1]](*sys.argv[2:])
