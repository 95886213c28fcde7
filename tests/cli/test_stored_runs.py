"""`show`, `threads` and the resume of a run that has ended read stored runs through
`reading_graph`, which loads no model client: it reads every kind of stored run exactly as the
plan–execute graph does, and those commands import no model stack."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig

from replan.cli.stored_runs import reading_graph
from replan.graphs.context import Context
from replan.graphs.errors import InvalidInputError
from replan.graphs.persistence import open_checkpointer, stored_thread_ids
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.testing import Reply, ScriptedOpenAIServer, http_error
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, Gate, cli_env, invoke
from tests.support.killed_writes import die_after_replanner_writes

MODEL_STACK = ("openai", "langchain_openai", "replan.graphs.model.client", "replan.graphs.nodes")
"""What reading a stored run must not import."""
TASK_TOOLS = Context(task_tools="compact")
"""A library run's context that gives it something to plan with (as `PLANNED` does a CLI run)."""


def _refuses_step_2(request: dict[str, Any]) -> Reply:
    if script.classify(request) == script.Call("executor", 2):
        return http_error(500, "the server broke")
    return script.respond(request)


async def _stop_mid_wave(db: Path, gate: Gate) -> None:
    """Thread `stopped`: a wave of 3 steps stopped (its task cancelled, as Ctrl-C does) while
    step 2 waits for the model, once steps 1 and 3 have finished."""
    async with open_checkpointer(db) as saver:
        graph = build_plan_execute_graph(checkpointer=saver)
        config: RunnableConfig = {"configurable": {"thread_id": "stopped"}}
        objective = {"messages": [("user", "Stop in 3 parallel steps")]}
        modes = ["updates", "tasks", "custom"]
        finished: list[Any] = []

        async def stream() -> None:
            async for mode, chunk in graph.astream(
                objective, config, stream_mode=modes, durability="sync", context=TASK_TOOLS
            ):
                if mode == "updates" and "executor" in chunk:
                    finished.append(chunk)

        async def two_steps_finished() -> None:
            while len(finished) < 2:
                await asyncio.sleep(0.01)

        run = asyncio.create_task(stream())
        assert await asyncio.to_thread(gate.reached.wait, 60)
        await asyncio.wait_for(two_steps_finished(), 60)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run


async def _given_no_objective(db: Path) -> None:
    """Thread `empty`: the library given no objective (its planner refuses the input)."""
    async with open_checkpointer(db) as saver:
        graph = build_plan_execute_graph(checkpointer=saver)
        with pytest.raises(InvalidInputError):
            await graph.ainvoke({"messages": []}, {"configurable": {"thread_id": "empty"}})


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """replan.sqlite in `tmp_path` (the current folder) with one run of each kind (`done` has
    two turns)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with ScriptedOpenAIServer(script.respond) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert invoke_quiet("run", *PLANNED, "Done in 2 steps", "--thread-id", "done") == 0
        assert invoke_quiet("run", "Then in 2 steps", "--thread-id", "done") == 0  # turn 2
        waiting = ("--thread-id", "waiting", "--approve-plan")
        assert invoke_quiet("run", *PLANNED, "Wait in 2 steps", *waiting) == 4
        rejected = ("--thread-id", "rejected", "--approve-plan")
        assert invoke_quiet("run", *PLANNED, "No in 2 steps", *rejected) == 4
        assert invoke_quiet("resume", "--thread-id", "rejected", "--reject", "no") == 8
        asyncio.run(die_after_replanner_writes(tmp_path / "replan.sqlite", "killed", monkeypatch))
        asyncio.run(_given_no_objective(tmp_path / "replan.sqlite"))
    with ScriptedOpenAIServer(_refuses_step_2) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        args = ("run", *PLANNED, "Break in 3 steps", "--thread-id", "failed", "--max-retries", "0")
        assert invoke_quiet(*args) == 3
    gate = Gate(step=2)
    with ScriptedOpenAIServer(gate) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        try:
            asyncio.run(_stop_mid_wave(tmp_path / "replan.sqlite", gate))
        finally:
            gate.release.set()
    yield tmp_path


def invoke_quiet(*args: str) -> int:
    from replan.cli import main

    return main([*args, "--quiet"])


async def _snapshots(db: Path) -> dict[str, tuple[str, str]]:
    """Each thread's snapshot, read through the run graph and the reading graph."""
    async with open_checkpointer(db, read_only=True) as saver:
        run, reading = build_plan_execute_graph(checkpointer=saver), reading_graph(saver)
        shown = {}
        for thread in await stored_thread_ids(saver):
            config: RunnableConfig = {"configurable": {"thread_id": thread}}
            shown[thread] = (
                repr(await run.aget_state(config)),
                repr(await reading.aget_state(config)),
            )
        return shown


def test_the_reading_graph_has_the_run_graphs_nodes_and_channels() -> None:
    run, reading = build_plan_execute_graph(), reading_graph(None)  # type: ignore[arg-type]
    assert run.channels.keys() == reading.channels.keys()
    assert {name: node.triggers for name, node in run.nodes.items()} == {
        name: node.triggers for name, node in reading.nodes.items()
    }


def test_every_kind_of_stored_run_reads_the_same_through_both_graphs(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshots = asyncio.run(_snapshots(runs / "replan.sqlite"))
    statuses = {
        thread: json.loads(invoke(capsys, "show", "--thread-id", thread, "--json").out)["status"]
        for thread in snapshots
    }
    assert statuses == {
        "done": "finished",
        "waiting": "waiting_for_approval",
        "rejected": "rejected",
        "failed": "failed",
        "empty": "failed",
        "stopped": "interrupted",
        "killed": "interrupted",
    }
    for thread, (through_run, through_reading) in snapshots.items():
        assert through_run == through_reading, thread


@pytest.mark.slow  # a process of its own, to see what it imports
def test_reading_commands_import_no_model_stack(runs: Path) -> None:
    code = (
        "import sys\n"
        "from replan.cli import main\n"
        "for args in (['show', '--thread-id', 'done'], ['threads'],\n"
        "             ['resume', '--thread-id', 'done', '--quiet']):\n"
        "    assert main(args) == 0, args\n"
        f"print([name for name in {MODEL_STACK!r} if name in sys.modules])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=runs, env=cli_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"
