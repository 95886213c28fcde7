"""`replan` whose checkpoint write after the planner is held until the process is stopped.

    python -m tests.support.held_write GATE ARG...

runs `replan ARG...` (as the console script does, from `sys.argv`) with the SQLite saver's
`aput` slowed down: the first checkpoint that holds a plan writes GATE, then waits in a worker
thread, as a write to a slow disk would, for a file GATE.release that never comes. A signal sent
once GATE exists lands while that checkpoint write is in flight. With `$HELD_AFTER_TOOL_CALL`
set, the write held is instead the first one of an executor step's loop that holds a tool's
result (the checkpoint after its `tools` node).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any
from unittest import mock

from langchain_core.messages import ToolMessage
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from replan.cli import main

HOLD_SECONDS = 120.0


def _wait_for(release: Path) -> None:
    deadline = time.monotonic() + HOLD_SECONDS
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def _held(values: dict[str, Any]) -> bool:
    if not os.environ.get("HELD_AFTER_TOOL_CALL"):
        return "plan" in values
    return any(isinstance(m, ToolMessage) for m in values.get("messages", []))


def held_aput(gate: Path) -> Any:
    """`AsyncSqliteSaver.aput` holding the first checkpoint that holds a plan at `gate`."""
    write = AsyncSqliteSaver.aput

    async def aput(saver: AsyncSqliteSaver, config: Any, checkpoint: Any, *rest: Any) -> Any:
        if _held(checkpoint["channel_values"]) and not gate.exists():
            gate.write_text("the checkpoint after the planner is being written")
            await asyncio.to_thread(_wait_for, gate.with_suffix(".release"))
        return await write(saver, config, checkpoint, *rest)

    return aput


if __name__ == "__main__":
    gate = Path(sys.argv[1]).resolve()
    sys.argv = ["replan", *sys.argv[2:]]
    with mock.patch.object(AsyncSqliteSaver, "aput", held_aput(gate)):
        sys.exit(main())
