"""Watching a run: what happens inside each step (tool calls, task changes, model retries,
waiting, elapsed time) on stderr, live on a terminal, as lines otherwise, or not at all."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from rich.console import Console

from replan.cli.display import FIRST_WAIT_NOTICE_SECONDS, LiveDisplay, PlainDisplay
from replan.cli.progress import ProgressPrinter
from replan.graphs.context import DEFAULT_TIMEOUT_SECONDS
from replan.testing import Reply, ScriptedOpenAIServer, http_error, tool_call
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, REPLAN, cli_env, invoke, run_cli

ANSWER_1 = "All 1 steps of [watch me in 1 steps] are done: RESULT 1/1"


def _busy_step(request: dict[str, Any]) -> Reply:
    """Step 1 creates a task, calls a tool that does not exist, starts the task, then reports;
    the first planner request fails once with HTTP 500."""
    turns = sum(m.get("role") == "assistant" for m in request["messages"])
    call = script.classify(request)
    if call.role == "executor" and turns == 0:
        return tool_call("TaskCreate", {"subject": "Write it", "description": "the report"})
    if call.role == "executor" and turns == 1:
        return tool_call("Nope", {"x": 1})
    if call.role == "executor" and turns == 2:
        return tool_call("TaskUpdate", {"taskId": "1", "status": "in_progress"})
    return script.respond(request)


@pytest.mark.slow
def test_plain_progress_shows_what_happens_inside_a_step(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(_busy_step) as server:
        server.push(http_error(500, "warming up", retry_after_ms=5))
        done = run_cli(
            server,
            tmp_path,
            "run",
            *PLANNED,
            "Watch me in 1 steps",
            "--max-retries",
            "2",
        )
    assert (done.code, done.out.strip()) == (0, ANSWER_1), done.err
    lines = done.err.splitlines()
    step = lines.index("Step 1: Step 1 of 1 [watch me in 1 steps]")
    assert lines[lines.index("Planning…") + 1] == (
        "  model: HTTP 500, retrying in 0.005 s (retry 1 of 2)"
    )
    assert lines[step + 1 : step + 4] == [
        '  → TaskCreate(subject="Write it", description="the report")',
        "  task #1 created: Write it",
        "  → Nope(x=1)",
    ]
    assert lines[step + 4].startswith("  ✗ Nope: Error: Nope is not a valid tool")
    assert lines[step + 5 : step + 7] == [
        '  → TaskUpdate(taskId="1", status="in_progress")',
        "  task #1 pending → in_progress: Write it",
    ]
    assert re.fullmatch(r"Step 1 done in \d+\.\d s: Executed step 1: RESULT 1/1", lines[step + 7])


@pytest.mark.slow
def test_a_silent_model_shows_how_long_it_has_been_waited_for(tmp_path: Path) -> None:
    def slow_planner(request: dict[str, Any]) -> Reply:
        if script.classify(request).role == "planner":
            time.sleep(FIRST_WAIT_NOTICE_SECONDS + 1.5)
        return script.respond(request)

    with ScriptedOpenAIServer(slow_planner) as server:
        done = run_cli(server, tmp_path, "run", *PLANNED, "Watch me in 1 steps")
    assert done.code == 0, done.err
    lines = done.err.splitlines()
    assert lines[1:3] == [
        "Planning…",
        f"  waiting for the model: {FIRST_WAIT_NOTICE_SECONDS:.0f} s",
    ]
    helped = run_cli(None, tmp_path, "run", *PLANNED, "--help").out
    assert f"seconds to wait for one model request (default: {DEFAULT_TIMEOUT_SECONDS:g})" in (
        " ".join(helped.split())
    )


@pytest.mark.slow
def test_quiet_shows_no_progress(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(script.respond) as server:
        done = run_cli(server, tmp_path, "run", *PLANNED, "Watch me in 1 steps", "--quiet")
    assert (done.code, done.out.strip(), done.err) == (0, ANSWER_1, "")


@pytest.mark.slow
def test_live_progress_on_a_terminal(tmp_path: Path) -> None:
    """stderr is a terminal: rich draws the running steps; the answer still goes to stdout."""
    terminal, stderr = pty.openpty()
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                chunk = os.read(terminal, 4096)
            except OSError:  # the process has gone and closed the terminal
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    with ScriptedOpenAIServer(_busy_step) as server:
        env = {**cli_env(server), "TERM": "xterm-256color", "COLUMNS": "100"}
        process = subprocess.Popen(
            [
                REPLAN,
                "run",
                *PLANNED,
                "Watch me in 1 steps",
                "--thread-id",
                "live",
            ],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        os.close(stderr)
        reader.start()
        out, _ = process.communicate(timeout=60)
    reader.join(timeout=10)
    os.close(terminal)
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode(errors="replace"))
    assert process.returncode == 0, shown
    assert out.decode().strip() == ANSWER_1
    assert "Traceback" not in shown
    assert "\x1b[" in b"".join(chunks).decode(errors="replace")  # drawn, not printed as lines
    for expected in (
        "Thread live (resume with: replan resume --thread-id live)",
        "Plan:",
        "Step 1: Step 1 of 1 [watch me in 1 steps]",
        "done in ",
        "Objective done in ",
    ):
        assert expected in shown


def _two_steps_at_once(printer: ProgressPrinter) -> None:
    """Stream events of a wave of two executor tasks that run at the same time, each calling a
    tool."""
    for task, step in (("a", "Fetch A"), ("b", "Fetch B")):
        run = {"step": {"id": ord(task) - 96, "step": step, "depends_on": []}}
        printer.handle((), "tasks", {"id": task, "name": "executor", "input": run})
    for task in ("a", "b"):
        call = {"name": "Lookup", "args": {"what": task}, "id": task, "type": "tool_call"}
        reply = {"act": {"messages": [_ai_with(call)]}}
        printer.handle((f"executor:{task}",), "updates", reply)


def _ai_with(call: dict[str, Any]) -> AIMessage:
    return AIMessage("", tool_calls=[call])


def test_steps_running_side_by_side_each_have_their_own_lane() -> None:
    out = io.StringIO()
    plain = ProgressPrinter(PlainDisplay(out))
    _two_steps_at_once(plain)
    done = {"id": 1, "step": "Fetch A", "result": "found A", "status": "done"}
    result = {"executed_steps": [done]}
    plain.handle((), "tasks", {"id": "a", "name": "executor", "result": result, "error": None})
    lines = out.getvalue().splitlines()
    assert lines[:2] == ["Step 1: Fetch A", "Step 2: Fetch B"]
    assert lines[2:4] == ['  [step 1] → Lookup(what="a")', '  [step 2] → Lookup(what="b")']
    assert re.fullmatch(r"Step 1 done in \d\.\d s: found A", lines[4])

    console = Console(file=io.StringIO(), force_terminal=True, width=100, record=True)
    live = LiveDisplay(console)
    printer = ProgressPrinter(live)
    _two_steps_at_once(printer)
    console.print(live.render(list(printer.lanes.values())))
    drawn = console.export_text()
    for line in ("Step 1: Fetch A", '→ Lookup(what="a")', "Step 2: Fetch B", '→ Lookup(what="b")'):
        assert line in drawn
    assert (
        drawn.index("Step 1: Fetch A")
        < drawn.index('Lookup(what="a")')
        < drawn.index("Step 2: Fetch B")
    )


STEP_2 = {"id": 2, "step": "Fetch B", "depends_on": [1]}


@pytest.mark.parametrize(
    ("replanned", "shown"),
    [
        ([STEP_2], []),
        ([{**STEP_2, "step": "Fetch C"}], ["Plan revised:", "  2. Fetch C [after: 1]"]),
    ],
)
def test_a_plan_is_shown_revised_only_when_the_replanner_changed_it(
    replanned: list[dict[str, Any]], shown: list[str]
) -> None:
    """A resumed run's printer starts from the steps the run had left."""
    out = io.StringIO()
    printer = ProgressPrinter(
        PlainDisplay(out), plan=[{"id": 1, "step": "Fetch A", "depends_on": []}, STEP_2]
    )
    done = {"id": 1, "step": "Fetch A", "result": "found A", "status": "done"}
    printer.handle((), "updates", {"executor": {"executed_steps": [done]}})
    printer.handle((), "updates", {"replanner": {"plan": replanned}})
    assert out.getvalue().splitlines() == shown


def test_approving_a_plan_unchanged_on_resume_does_not_revise_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with ScriptedOpenAIServer(script.respond) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        asked = invoke(
            capsys,
            "run",
            *PLANNED,
            "Ask in 3 steps",
            "--thread-id",
            "a",
            "--approve-plan",
        )
        assert asked.code == 4, asked.err
        approved = invoke(capsys, "resume", "--thread-id", "a", "--approve")
    assert approved.code == 0, approved.err
    assert "Plan approved." in approved.err and "Plan revised:" not in approved.err
