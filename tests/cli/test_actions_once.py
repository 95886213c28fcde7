"""Actions run once (docs/persistence.md, "Actions run once"), proved with real processes:
`replan` SIGKILLed at a moment its gate proves was reached, then resumed, on SQLite and
PostgreSQL; every tool effect is a line in a file, with the call's idempotency key."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from replan.testing import Reply, ScriptedOpenAIServer, tool_call
from replan.testing import plan_script as script
from tests.support.cli_harness import (
    PLANNED,
    REPLAN,
    blocked_reading_stdin,
    cli_env,
    finish,
    run_cli,
    start_cli,
)
from tests.support.kill_gates import kill_at_gate
from tests.support.terminal import Terminal

pytestmark = pytest.mark.slow  # crash tests: real processes, killed mid-run

ROOT = Path(__file__).resolve().parents[2]

TOOLS = '''
import os, time
from pathlib import Path
from langchain_core.tools import tool
from replan import declare_effects, idempotency_key

EFFECTS = Path(os.environ["EFFECTS"])
HOLD = os.environ.get("HOLD_IN", "")


def effect(name: str, text: str) -> str:
    with EFFECTS.open("a") as out:
        out.write(f"{name} {text} {idempotency_key()}\\n")
    gate = Path(f"{EFFECTS}.gate")
    if HOLD == f"{name}:{text}" and not gate.exists():
        gate.write_text(str(os.getpid()))  # the moment: inside the call, its effect done
        time.sleep(120)
    return f"{name} {text} done"


@tool
def append(text: str) -> str:
    """Append a line to the log."""
    return effect("append", text)


@tool
def put(text: str) -> str:
    """Store a value (the same value twice is stored once)."""
    return effect("put", text)


TOOLS = [append, declare_effects(put, retry_safe=True)]
'''
OBJECTIVE = "Crash test in 1 steps"


class Script:
    """The scripted model: step 1's executor calls `tool` with "a", then with "b", then reports.
    With `hold_after_first`, the model request that follows the first call's result is held
    (the moment between a call's return and the next request) until released."""

    def __init__(self, tool: str, *, hold_after_first: bool = False) -> None:
        self.tool, self.hold = tool, hold_after_first
        self.reached, self.release = threading.Event(), threading.Event()

    def __call__(self, request: dict[str, Any]) -> Reply:
        call = script.classify(request)
        results = sum(m.get("role") == "tool" for m in request.get("messages", []))
        if call.role == "executor" and call.step == 1 and results < 2:
            if results == 1 and self.hold and not self.reached.is_set():
                self.reached.set()
                self.release.wait(timeout=60)
            return tool_call(self.tool, {"text": "ab"[results]})
        return script.respond(request)


def _effects(path: Path) -> list[tuple[str, str, str]]:
    lines = path.read_text().splitlines() if path.exists() else []
    return [tuple(line.split(" ", 2)) for line in lines]  # type: ignore[misc]


@pytest.fixture
def tools_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "acting_tools.py").write_text(TOOLS)
    effects = tmp_path / "effects.txt"
    monkeypatch.setenv("EFFECTS", str(effects))
    monkeypatch.setenv("PYTHONPATH", str(Path.cwd()))
    return effects


def _run_args(thread: str, runs_db: list[str]) -> tuple[str, ...]:
    return ("run", *PLANNED, OBJECTIVE, "--thread-id", thread, "--tools",
            "acting_tools.py:TOOLS", *runs_db)  # fmt: skip


def test_a_step_killed_between_calls_resumes_without_repeating_its_finished_call(
    tmp_path: Path, tools_env: Path, runs_db: list[str]
) -> None:
    model = Script("append", hold_after_first=True)
    with ScriptedOpenAIServer(model) as server:
        run = start_cli(server, tmp_path, *_run_args("k1", runs_db))
        try:
            assert model.reached.wait(timeout=60), finish(run, timeout=5)
        finally:
            run.send_signal(signal.SIGKILL)
            killed = finish(run)
            model.release.set()
        assert killed.code == -signal.SIGKILL
        assert [e[:2] for e in _effects(tools_env)] == [("append", "a")]

        resumed = run_cli(server, tmp_path, "resume", "--thread-id", "k1", *runs_db)
        assert resumed.code == 0, resumed.err
    effects = _effects(tools_env)
    assert [e[:2] for e in effects] == [("append", "a"), ("append", "b")]  # was: a a b
    assert effects[0][2] != effects[1][2]  # each call its own key


@pytest.mark.parametrize("answer", ["--approve", "--respond"])
def test_a_call_in_flight_of_a_tool_not_safe_to_retry_waits_for_a_decision(
    tmp_path: Path,
    tools_env: Path,
    runs_db: list[str],
    monkeypatch: pytest.MonkeyPatch,
    answer: str,
) -> None:
    monkeypatch.setenv("HOLD_IN", "append:b")
    with ScriptedOpenAIServer(Script("append")) as server:
        run = start_cli(server, tmp_path, *_run_args("k2", runs_db))
        kill_at_gate(run, Path(f"{tools_env}.gate"))  # type: ignore[arg-type]
        assert [e[:2] for e in _effects(tools_env)] == [("append", "a"), ("append", "b")]

        paused = run_cli(server, tmp_path, "resume", "--thread-id", "k2", *runs_db)
        assert paused.code == 4, paused.err
        assert "A tool call is waiting for approval" in paused.err
        assert "--respond RESULT" in paused.err
        assert len(_effects(tools_env)) == 2  # not made again without a decision

        shown = run_cli(server, tmp_path, "show", "--thread-id", "k2", *runs_db)
        assert "`append` was being called when the run stopped" in shown.out

        given = [answer, "append b done"] if answer == "--respond" else [answer]
        ended = run_cli(server, tmp_path, "resume", "--thread-id", "k2", *given, *runs_db)
        assert ended.code == 0, ended.err
    effects = _effects(tools_env)
    if answer == "--respond":
        assert [e[:2] for e in effects] == [("append", "a"), ("append", "b")]
    else:  # made again, with the key it had
        assert [e[:2] for e in effects] == [("append", "a"), ("append", "b"), ("append", "b")]
        assert effects[1][2] == effects[2][2]


def test_a_call_in_flight_of_a_retry_safe_tool_is_made_again_with_the_same_key(
    tmp_path: Path, tools_env: Path, runs_db: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOLD_IN", "put:b")
    with ScriptedOpenAIServer(Script("put")) as server:
        run = start_cli(server, tmp_path, *_run_args("k3", runs_db))
        kill_at_gate(run, Path(f"{tools_env}.gate"))  # type: ignore[arg-type]
        resumed = run_cli(server, tmp_path, "resume", "--thread-id", "k3", *runs_db)
        assert resumed.code == 0, resumed.err
    effects = _effects(tools_env)
    assert [e[:2] for e in effects] == [("put", "a"), ("put", "b"), ("put", "b")]
    assert effects[1][2] == effects[2][2]


def test_a_second_process_cannot_run_a_live_thread(
    tmp_path: Path, tools_env: Path, runs_db: list[str]
) -> None:
    model = Script("append", hold_after_first=True)
    with ScriptedOpenAIServer(model) as server:
        first = start_cli(server, tmp_path, *_run_args("k4", runs_db))
        try:
            assert model.reached.wait(timeout=60), finish(first, timeout=5)
            listed = run_cli(server, tmp_path, "threads", *runs_db)
            assert f"running in process {first.pid} on" in listed.out, listed.out
            for again in (
                ("resume", "--thread-id", "k4", *runs_db),
                ("run", OBJECTIVE, "--thread-id", "k4", *runs_db),
            ):
                refused = run_cli(server, tmp_path, *again)
                assert refused.code == 9, refused.err
                assert f"thread k4 is running in process {first.pid} on" in refused.err
                assert len(refused.err.strip().splitlines()) == 1
        finally:
            model.release.set()
        done = finish(first)
        assert done.code == 0, done.err
    assert [e[:2] for e in _effects(tools_env)] == [("append", "a"), ("append", "b")]


def test_a_holder_that_wakes_after_a_take_over_stops_before_it_acts_again(
    tmp_path: Path, tools_env: Path, runs_db: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPLAN_LEASE_SECONDS", "2")  # a frozen holder's lease lapses soon
    model = Script("append", hold_after_first=True)
    with ScriptedOpenAIServer(model) as server:
        first = start_cli(server, tmp_path, *_run_args("k5", runs_db))
        try:
            assert model.reached.wait(timeout=60), finish(first, timeout=5)
            first.send_signal(signal.SIGSTOP)  # paused, as a stopped VM or a long GC
            deadline = time.monotonic() + 30
            while "running in" in run_cli(server, tmp_path, "threads", *runs_db).out:
                assert time.monotonic() < deadline, "the frozen holder's lease never lapsed"
            taken = run_cli(server, tmp_path, "resume", "--thread-id", "k5", *runs_db)
            assert taken.code == 0, taken.err
        finally:
            model.release.set()
            first.send_signal(signal.SIGCONT)
        woken = finish(first)
    assert woken.code == 9, woken.err
    assert "thread k5 was taken over by process" in woken.err
    # the woken holder wrote nothing and called nothing: a once, b once (by the taker)
    assert [e[:2] for e in _effects(tools_env)] == [("append", "a"), ("append", "b")]


def test_a_step_killed_while_the_checkpoint_after_its_call_is_written_makes_it_once(
    tmp_path: Path, tools_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HELD_AFTER_TOOL_CALL", "1")  # SQLite: the write is held in its saver
    gate = tmp_path / "writing"
    with ScriptedOpenAIServer(Script("append")) as server:
        held = [sys.executable, "-m", "tests.support.held_write", str(gate),
                *_run_args("k6", [])]  # fmt: skip
        env = {**cli_env(server), "PYTHONPATH": str(ROOT)}
        run = subprocess.Popen(held, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
        kill_at_gate(run, gate)
        assert [e[:2] for e in _effects(tools_env)] == [("append", "a")]
        resumed = run_cli(server, tmp_path, "resume", "--thread-id", "k6")
        if resumed.code == 4:  # the call's result was not saved yet: it counts as in flight
            assert "A tool call is waiting for approval" in resumed.err
            given = ("--respond", "append a done")
            resumed = run_cli(server, tmp_path, "resume", "--thread-id", "k6", *given)
        assert resumed.code == 0, resumed.err
    # saved or asked about, the call was never made again without a decision
    assert [e[:2] for e in _effects(tools_env)] == [("append", "a"), ("append", "b")]


def test_a_run_killed_while_a_call_waits_for_a_decision_keeps_waiting(
    tmp_path: Path, tools_env: Path, runs_db: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOLD_IN", "append:b")
    with ScriptedOpenAIServer(Script("append")) as server:
        run = start_cli(server, tmp_path, *_run_args("k7", runs_db))
        kill_at_gate(run, Path(f"{tools_env}.gate"))  # type: ignore[arg-type]
        env = {**cli_env(server, runs_db[-1] if runs_db else None), "HOLD_IN": ""}
        asking = Terminal([REPLAN, "resume", "--thread-id", "k7"], tmp_path, env)
        assert asking.wait_for("Make the call?"), asking.text()
        assert blocked_reading_stdin(asking.process.pid), asking.text()  # the moment: the prompt
        asking.process.send_signal(signal.SIGKILL)
        asking.finish()
        shown = run_cli(server, tmp_path, "show", "--thread-id", "k7", *runs_db)
        assert "Status: waiting for approval" in shown.out, shown.out
        assert len(_effects(tools_env)) == 2  # nothing made again
        given = ("--respond", "append b done")
        ended = run_cli(server, tmp_path, "resume", "--thread-id", "k7", *given, *runs_db)
        assert ended.code == 0, ended.err
    assert [e[:2] for e in _effects(tools_env)] == [("append", "a"), ("append", "b")]
