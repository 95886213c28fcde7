"""Child process for the file store tests: uses one task folder through the real tools.

    python -m tests.support.task_store_worker hammer FOLDER NAME COUNT
    python -m tests.support.task_store_worker hold FOLDER before|after|half FILE GATE TOOL ARGS_JSON

`hammer` creates COUNT tasks owned by NAME through TaskCreate and TaskUpdate, printing each
new ID. `hold` makes one tool call and stops in the middle of writing its change, at the gate
(`tests.support.kill_gates.hold_here`), to be killed there: after its journal record is flushed, or
before, after or half-way through writing FILE.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

from replan.state.task_stores import filesystem
from replan.state.task_stores.filesystem import JOURNAL_FILE, FileTaskStore
from replan.tools import task_tools
from tests.support.kill_gates import hold_here


def hammer(folder: str, name: str, count: str) -> None:
    create, _, update, _ = task_tools(store=folder)
    for number in range(int(count)):
        reply = create.invoke({"subject": f"{name} {number}", "description": name})
        task_id = reply.split("#", 1)[1].split(" ", 1)[0]
        update.invoke({"taskId": task_id, "owner": name})
        print(task_id, flush=True)


def hold(folder: str, when: str, file: str, gate: str, tool: str, args: str) -> None:
    """One tool call that stops at the gate while writing its change: `after` the journal
    record is flushed, `before`/`after` FILE is written, or once `half` of FILE is written."""
    real_overwrite, real_append = filesystem.overwrite_text, FileTaskStore._append

    def overwrite(path: Path, text: str, **kwargs: Any) -> None:
        at_file = Path(path).name == file
        if at_file and when == "before":
            hold_here(Path(gate))
        if at_file and when == "half":  # only the first half of the new bytes: a torn file
            Path(path).write_bytes(text.encode()[: len(text) // 2])
            hold_here(Path(gate))
        real_overwrite(path, text, **kwargs)
        if at_file and when == "after":
            hold_here(Path(gate))

    def append(store: FileTaskStore, line: bytes, *, flush: bool) -> None:
        real_append(store, line, flush=flush)
        if flush and file == JOURNAL_FILE and when == "after":
            hold_here(Path(gate))

    tools = {t.name: t for t in task_tools(store=folder)}
    with (
        mock.patch.object(filesystem, "overwrite_text", overwrite),
        mock.patch.object(FileTaskStore, "_append", append),
    ):
        print(tools[tool].invoke(json.loads(args)))
    sys.exit(f"the call finished without passing {when} {file}")


if __name__ == "__main__":
    commands: dict[str, Callable[..., None]] = {"hammer": hammer, "hold": hold}
    commands[sys.argv[1]](*sys.argv[2:])
