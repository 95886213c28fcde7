"""`replan` with plans whose steps run side by side: the options, the progress lines, plan
review with dependencies, and a run killed in the middle of a wave."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, Gate, finish, invoke, start_cli
from tests.support.fake_models import ANSWER_CALLS
from tests.support.gathering import Gathering

ANSWER_4 = "RESULT 1/4, RESULT 2/4, RESULT 3/4, RESULT 4/4"


@pytest.fixture
def clock() -> script.Clock:
    """The scripted model's clock; a test sets how its steps meet (`Gathering`)."""
    return script.Clock()


@pytest.fixture
def server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, clock: script.Clock
) -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(clock) as srv:
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("REPLAN_DB", raising=False)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        yield srv


@pytest.mark.parametrize(
    "option",
    [
        ["--max-concurrency", "0"],
        ["--max-concurrency", "65"],
        ["--max-concurrency", "two"],
        ["--replan", "sometimes"],
    ],
)
def test_bad_wave_options_are_usage_errors(
    option: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        invoke(capsys, "run", *PLANNED, "Anything", *option)
    assert exited.value.code == 2
    assert option[0] in capsys.readouterr().err


def test_a_wave_prints_its_steps_side_by_side(
    server: ScriptedOpenAIServer, clock: script.Clock, capsys: pytest.CaptureFixture[str]
) -> None:
    clock.latency = Gathering([[1, 2, 3]])
    done = invoke(capsys, "run", *PLANNED, "Survey in 3 parallel steps", "--thread-id", "w")
    assert done.code == 0 and "RESULT 1/3, RESULT 2/3, RESULT 3/3" in done.out
    lines = done.err.splitlines()
    assert "  2. Step 2 of 3 [survey in 3 parallel steps] [after: nothing]" in lines
    started = [i for i, line in enumerate(lines) if line.startswith("Step ") and ": Step " in line]
    ended = [i for i, line in enumerate(lines) if re.match(r"Step \d done in [\d.]+ s: ", line)]
    assert len(started) == len(ended) == 3
    assert max(started) < min(ended)  # all three were running at once
    assert any(
        re.fullmatch(r"Step 3 done in [\d.]+ s: Executed step 3: RESULT 3/3", x) for x in lines
    )


def test_the_wave_options_bound_the_run(
    server: ScriptedOpenAIServer, clock: script.Clock, capsys: pytest.CaptureFixture[str]
) -> None:
    clock.latency = Gathering([[1, 2], [3, 4]])
    options = ["--max-concurrency", "2", "--replan", "when_needed"]
    done = invoke(
        capsys,
        "run",
        *PLANNED,
        "Survey in 4 parallel steps",
        "--thread-id",
        "k",
        *options,
    )
    assert done.code == 0 and ANSWER_4 in done.out
    assert clock.most_at_once() == 2
    assert [span.call.role for span in clock.spans].count("replanner") == 1


def test_edit_plan_takes_steps_with_dependencies(
    server: ScriptedOpenAIServer, clock: script.Clock, capsys: pytest.CaptureFixture[str]
) -> None:
    clock.latency = Gathering([[1, 2], [3]])
    assert (
        invoke(
            capsys,
            "run",
            *PLANNED,
            "Ship it in 2 steps",
            "--thread-id",
            "e",
            "--approve-plan",
        ).code
        == 4
    )
    steps = [
        '{"step": "Step 1 of 3 [mine]", "depends_on": []}',
        '{"step": "Step 2 of 3 [mine]", "depends_on": []}',
        "Step 3 of 3 [mine]",
    ]
    edited = invoke(capsys, "resume", "--thread-id", "e", "--edit-plan", *steps)
    assert edited.code == 0 and "RESULT 1/3, RESULT 2/3, RESULT 3/3" in edited.out
    assert "Plan edited:\n  1. Step 1 of 3 [mine] [after: nothing]" in edited.err
    assert "  3. Step 3 of 3 [mine] [after: 2]" in edited.err
    spans = clock.executor_spans()
    assert spans[1].start < spans[2].end and spans[2].start < spans[1].end


def _saved_results(db: Path) -> int:
    """How many executor results the run's database holds as pending writes."""
    with sqlite3.connect(db) as conn:
        query = "SELECT COUNT(*) FROM writes WHERE channel = 'executed_steps'"
        try:
            return int(conn.execute(query).fetchone()[0])
        except sqlite3.OperationalError:  # the run has not created its tables yet
            return 0


def _wait_for(condition: Callable[[], bool], timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow  # a real process, killed mid-wave
def test_sigkill_in_a_wave_then_resume_runs_only_the_unfinished_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    gate = Gate(step=3)
    with ScriptedOpenAIServer(gate) as server:
        run = start_cli(
            server,
            tmp_path,
            "run",
            *PLANNED,
            "Crash in 4 parallel steps",
            "--thread-id",
            "c",
        )
        try:
            assert gate.reached.wait(timeout=60), finish(run, timeout=5)
            # The moment: steps 1, 2 and 4 are done and saved; step 3 is still at the model.
            assert _wait_for(lambda: _saved_results(tmp_path / "replan.sqlite") == 3)
        finally:
            run.send_signal(signal.SIGKILL)
            killed = finish(run)
            gate.release.set()
        assert killed.code == -signal.SIGKILL
        assert sorted(script.executor_steps(server.requests)) == [1, 2, 3, 4]

        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        resumed = invoke(capsys, "resume", "--thread-id", "c")
        assert resumed.code == 0, resumed.err
        assert ANSWER_4 in resumed.out
        assert sorted(script.executor_steps(server.requests)) == [1, 2, 3, 3, 4]
        kept = "Step 1 done (saved before the stop): Executed step 1: RESULT 1/4"
        assert kept in resumed.err and re.search(
            r"Step 3 done in [\d.]+ s: Executed step 3", resumed.err
        )

        shown = invoke(capsys, "show", "--thread-id", "c").out
        for number in (1, 2, 3, 4):
            assert shown.count(f"Result: Executed step {number}: RESULT {number}/4") == 1
        # Usage follows the checkpoints: the saved steps count once, the killed call not at all,
        # and the resumed run's progress adds the steps saved before the stop to its total.
        usage = json.loads(invoke(capsys, "show", "--thread-id", "c", "--json").out)["usage"]
        assert {key: step["calls"] for key, step in usage["steps"].items()} == dict.fromkeys(
            "1234", 1
        )
        total = usage["total"]
        calls = 6 + ANSWER_CALLS
        assert total["calls"] == len(server.requests) - 1 == calls
        last = [line for line in resumed.err.splitlines() if line.startswith("Tokens so far")][-1]
        assert last.startswith(f"Tokens so far: {calls} model calls: {total['input']:,} in ")
