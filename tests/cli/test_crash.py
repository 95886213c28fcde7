"""Runs stopped from outside (SIGKILL, Ctrl-C, Ctrl-D at the approval prompt) resume without
redoing checkpointed steps, and a resume command is printed only for a run that exists."""

from __future__ import annotations

import asyncio
import os
import pty
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from replan.graphs.persistence import DEFAULT_DB
from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.cli_harness import (
    PLANNED,
    Gate,
    Lines,
    blocked_reading_stdin,
    finish,
    invoke,
    run_cli,
    start_cli,
    stored_steps,
)
from tests.support.killed_writes import die_after_replanner_writes

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
        args = (
            "run",
            *PLANNED,
            "Crash test in 3 steps",
            "--thread-id",
            "c1",
            *runs_db,
        )
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
        run = start_cli(
            server,
            tmp_path,
            "run",
            *PLANNED,
            "Stop me in 2 steps",
            "--thread-id",
            "i",
        )
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


def test_a_run_killed_between_saving_writes_and_its_checkpoint_is_not_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The replanner's writes are saved, then the process dies before the checkpoint that folds
    them in: LangGraph's `next` is empty, yet the run is not finished and must resume."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with ScriptedOpenAIServer(script.respond) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)

        next_nodes = asyncio.run(die_after_replanner_writes(DEFAULT_DB, "w", monkeypatch))
        assert next_nodes == ()

        shown = invoke(capsys, "show", "--thread-id", "w")
        assert "Status: interrupted after replanner" in shown.out
        resumed = invoke(capsys, "resume", "--thread-id", "w")
        assert resumed.code == 0, resumed.err
        assert "RESULT 1/3, RESULT 2/3, RESULT 3/3" in resumed.out
        assert script.executor_steps(server.requests) == [1, 2, 3]


def test_the_resume_hint_appears_once_the_run_is_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """While the planner's request is held, the hint is on stderr and names a run that
    exists; killed there, the run resumes."""
    monkeypatch.chdir(tmp_path)
    gate = Gate(call=script.Call("planner"))
    with ScriptedOpenAIServer(gate) as server:
        run = start_cli(
            server,
            tmp_path,
            "run",
            *PLANNED,
            "Saved early in 2 steps",
            "--thread-id",
            "s",
        )
        assert run.stderr is not None
        err = Lines(run.stderr)
        try:
            assert gate.reached.wait(timeout=60)
            assert err.wait_for("Thread s (resume with: replan resume --thread-id s)")
            shown = invoke(capsys, "show", "--thread-id", "s")
            assert shown.code == 0 and f"Status: running in process {run.pid} on" in shown.out
        finally:
            run.kill()
            run.wait(timeout=60)
            gate.release.set()
        resumed = run_cli(server, tmp_path, "resume", "--thread-id", "s")
        assert resumed.code == 0 and "RESULT 1/2, RESULT 2/2" in resumed.out, resumed.err


def test_interrupted_before_the_run_exists_gives_no_resume_hint(tmp_path: Path) -> None:
    """Ctrl-C while `run -` still reads its objective: no run, so no resume command."""
    run = start_cli(
        None,
        tmp_path,
        "run",
        *PLANNED,
        "-",
        "--thread-id",
        "early",
        stdin=subprocess.PIPE,
    )
    try:
        assert blocked_reading_stdin(run.pid)
        run.send_signal(signal.SIGINT)
        stopped = finish(run)
    finally:
        run.kill()
    assert (stopped.code, stopped.err) == (130, "replan: interrupted\n")
    assert list(tmp_path.iterdir()) == []


def _asking(tmp_path: Path, server: ScriptedOpenAIServer, thread: str) -> tuple[Any, Lines, int]:
    """`run --approve-plan` with a terminal as stdin, once it asks; (process, stderr, pty)."""
    terminal, stdin = pty.openpty()
    args = ("Ask me in 2 steps", "--thread-id", thread, "--approve-plan")
    run = start_cli(server, tmp_path, "run", *PLANNED, *args, stdin=stdin)
    os.close(stdin)
    assert run.stderr is not None
    err = Lines(run.stderr)
    assert err.wait_for("Approve this plan? [a]pprove / [e]dit / [r]eject:"), err.lines
    return run, err, terminal


def test_ctrl_d_at_the_approval_prompt_leaves_the_plan_waiting(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(script.respond) as server:
        run, err, terminal = _asking(tmp_path, server, "d")
        try:
            os.write(terminal, b"\x04")  # Ctrl-D: end of input
            assert run.wait(timeout=60) == 4
        finally:
            run.kill()
            os.close(terminal)
        lines = err.text().splitlines()
        assert "Traceback" not in err.text()
        assert lines[-2] == "No answer (end of input)."
        assert lines[-1].startswith("The plan is waiting for approval. Answer with: replan resume")
        approved = run_cli(server, tmp_path, "resume", "--thread-id", "d", "--approve")
        assert approved.code == 0 and "RESULT 1/2, RESULT 2/2" in approved.out


def test_the_first_ctrl_c_at_the_approval_prompt_stops(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(script.respond) as server:
        run, err, terminal = _asking(tmp_path, server, "c")
        try:
            assert blocked_reading_stdin(run.pid)  # at the prompt, not just before it
            run.send_signal(signal.SIGINT)
            assert run.wait(timeout=30) == 130
        finally:
            run.kill()
            os.close(terminal)
        assert err.text().splitlines()[-1] == (
            "replan: interrupted; continue with: replan resume --thread-id c"
        )
        assert "Traceback" not in err.text()
        approved = run_cli(server, tmp_path, "resume", "--thread-id", "c", "--approve")
        assert approved.code == 0 and "RESULT 1/2, RESULT 2/2" in approved.out
