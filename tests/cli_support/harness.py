"""Run `replan` in-process or as a real subprocess against a scripted model server."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig

from replan.graphs.cli import main
from replan.graphs.cli.persistence import DEFAULT_DB, open_checkpointer
from replan.graphs.plan_execute import build_plan_execute_graph
from tests import plan_execute_script as script
from tests.scripted_openai import Reply, ScriptedOpenAIServer

REPLAN = str(Path(sys.executable).with_name("replan"))
"""The console script `pip install -e .` puts next to the interpreter."""


@dataclass(frozen=True)
class Outcome:
    """Exit code and captured output of one `replan` invocation."""

    code: int
    out: str
    err: str


def cli_env(server: ScriptedOpenAIServer, replan_db: str | None = None) -> dict[str, str]:
    """The environment of a `replan` subprocess talking to `server` (REPLAN_DB: `replan_db`)."""
    env = {**os.environ, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": server.base_url}
    if replan_db is not None:
        env["REPLAN_DB"] = replan_db
    return env


def start_cli(
    server: ScriptedOpenAIServer, cwd: Path, *args: str, replan_db: str | None = None
) -> subprocess.Popen[str]:
    """Start `replan ARGS` in `cwd` (with `REPLAN_DB` set to `replan_db`), capturing its output."""
    return subprocess.Popen(
        [REPLAN, *args],
        cwd=cwd,
        env=cli_env(server, replan_db),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str], timeout: float = 60) -> Outcome:
    """Wait for a started `replan` process and collect its outcome."""
    out, err = process.communicate(timeout=timeout)
    return Outcome(process.returncode, out, err)


def run_cli(
    server: ScriptedOpenAIServer, cwd: Path, *args: str, replan_db: str | None = None
) -> Outcome:
    """Run `replan ARGS` as a subprocess to completion."""
    return finish(start_cli(server, cwd, *args, replan_db=replan_db))


def stored_steps(db_args: list[str], thread_id: str) -> list[str]:
    """The steps a stored run has recorded as executed, in order (`db_args`: `--db X` or none,
    for ./replan.sqlite)."""

    async def read() -> list[str]:
        async with open_checkpointer(db_args[-1] if db_args else DEFAULT_DB) as saver:
            config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
            snapshot = await build_plan_execute_graph(checkpointer=saver).aget_state(config)
        return [done["step"] for done in snapshot.values.get("executed_steps", [])]

    return asyncio.run(read())


def invoke(capsys: pytest.CaptureFixture[str], *args: str) -> Outcome:
    """Run `replan ARGS` in this process (faster; the environment comes from monkeypatch)."""
    code = main(list(args))
    captured = capsys.readouterr()
    return Outcome(code, captured.out, captured.err)


class Gate:
    """A responder that holds the first executor request for `step` until released."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, request: dict[str, Any]) -> Reply:
        call = script.classify(request)
        if call == script.Call("executor", self.step) and not self.reached.is_set():
            self.reached.set()
            self.release.wait(timeout=60)
        return script.respond(request)

    def signal_when_held(self, process: subprocess.Popen[str], signum: int) -> Outcome:
        """Once the request is held, send `signum` to `process`; then let the request go."""
        try:
            assert self.reached.wait(timeout=60), finish(process, timeout=5)
        finally:
            process.send_signal(signum)
            outcome = finish(process)
            self.release.set()
        return outcome
