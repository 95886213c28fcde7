"""A `replan run` killed with SIGKILL mid-step resumes without redoing checkpointed steps."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from replan.graphs.cli.persistence import DEFAULT_DB, open_checkpointer
from replan.graphs.plan_execute import build_plan_execute_graph
from tests import plan_execute_script as script
from tests.cli_support.harness import Gate, invoke, run_cli, start_cli, stored_steps
from tests.scripted_openai import ScriptedOpenAIServer

pytestmark = pytest.mark.slow  # crash tests: real processes, killed mid-run


def test_sigkill_during_step_two_then_resume_finishes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    runs_db: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    gate = Gate(step=2)
    with ScriptedOpenAIServer(gate) as server:
        args = ("run", "Crash test in 3 steps", "--thread-id", "c1", *runs_db)
        run = start_cli(server, tmp_path, *args)
        killed = gate.signal_when_held(run, signal.SIGKILL)
        assert killed.code == -signal.SIGKILL
        assert "Step 2: Step 2 of 3" in killed.err

        shown = invoke(capsys, "show", "--thread-id", "c1", *runs_db)
        assert shown.code == 0, shown.err
        assert "Status: interrupted at executor" in shown.out
        assert "RESULT 1/3" in shown.out and "RESULT 2/3" not in shown.out

        resumed = run_cli(server, tmp_path, "resume", "--thread-id", "c1", *runs_db)
        assert resumed.code == 0, resumed.err
        assert "RESULT 1/3, RESULT 2/3, RESULT 3/3" in resumed.out
        assert "Step 1" not in resumed.err and "Step 2: Step 2 of 3" in resumed.err

        roles = [script.classify(r).role for r in server.requests]
        assert roles.count("planner") == 1
        assert script.executor_steps(server.requests) == [1, 2, 2, 3]
    steps = [script.step_text(i, 3, "crash test in 3 steps") for i in (1, 2, 3)]
    assert stored_steps(runs_db, "c1") == steps  # each step recorded once
    assert (tmp_path / DEFAULT_DB).exists() == (not runs_db)


def test_ctrl_c_stops_with_130_and_the_run_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gate = Gate(step=1)
    with ScriptedOpenAIServer(gate) as server:
        run = start_cli(server, tmp_path, "run", "Stop me in 2 steps", "--thread-id", "i")
        stopped = gate.signal_when_held(run, signal.SIGINT)
        assert stopped.code == 130 and "Traceback" not in stopped.err
        assert stopped.err.splitlines()[-1] == (
            "replan: interrupted; continue with: replan resume --thread-id i"
        )
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        resumed = invoke(capsys, "resume", "--thread-id", "i")
        assert resumed.code == 0 and "RESULT 1/2, RESULT 2/2" in resumed.out
        assert script.executor_steps(server.requests) == [1, 1, 2]


class Killed(Exception):
    """Stands in for SIGKILL at one exact instant."""


def test_a_run_killed_between_saving_writes_and_its_checkpoint_is_not_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The replanner's writes are saved, then the process dies before the checkpoint that folds
    them in: LangGraph's `next` is empty, yet the run is not finished and must resume."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with ScriptedOpenAIServer(script.respond) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)

        async def die_after_replanner_writes() -> None:
            async with open_checkpointer(DEFAULT_DB) as saver:
                save_writes, replanned = saver.aput_writes, False

                async def aput_writes(config: Any, writes: Any, task_id: str, *rest: Any) -> None:
                    nonlocal replanned
                    channels = {channel for channel, _ in writes}
                    replan = "plan" in channels and "response" not in channels
                    replanned = replanned or replan
                    await save_writes(config, writes, task_id, *rest)

                async def aput(*args: Any) -> Any:
                    if replanned:
                        raise Killed
                    return await AsyncSqliteSaver.aput(saver, *args)

                monkeypatch.setattr(saver, "aput_writes", aput_writes)
                monkeypatch.setattr(saver, "aput", aput)
                graph = build_plan_execute_graph(checkpointer=saver)
                config: RunnableConfig = {"configurable": {"thread_id": "w"}}
                objective = {"messages": [("user", "Pending writes in 3 steps")]}
                with pytest.raises(Killed):
                    await graph.ainvoke(objective, config, durability="sync")
                assert (await graph.aget_state(config)).next == ()

        asyncio.run(die_after_replanner_writes())

        shown = invoke(capsys, "show", "--thread-id", "w")
        assert "Status: interrupted after replanner" in shown.out
        resumed = invoke(capsys, "resume", "--thread-id", "w")
        assert resumed.code == 0, resumed.err
        assert "RESULT 1/3, RESULT 2/3, RESULT 3/3" in resumed.out
        assert script.executor_steps(server.requests) == [1, 2, 3]
