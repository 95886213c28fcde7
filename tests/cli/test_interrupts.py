"""Ctrl-C typed on the terminal, or SIGTERM, at any point of a run (a model request, a tool call,
a checkpoint write, the approval prompt) stops it with exit code 130 and leaves the thread
`interrupted at NODE` (at the prompt: still waiting for approval) with what was done kept;
`replan resume` goes on from there. Each `replan` runs as a real process on a pseudo-terminal,
so Ctrl-C is the terminal's SIGINT to its foreground process group and progress is drawn live.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.cli_harness import (
    PLANNED,
    REPLAN,
    Gate,
    blocked_reading_stdin,
    cli_env,
    invoke,
    looks_up_a_price,
)
from tests.support.terminal import Terminal

pytestmark = pytest.mark.slow  # real processes, stopped mid-run

ROOT = Path(__file__).resolve().parents[2]
STOPS: dict[str, Callable[[Terminal], None]] = {
    "ctrl-c": Terminal.ctrl_c,
    "sigterm": lambda terminal: terminal.process.send_signal(signal.SIGTERM),
}
TOOLS_FILE = '''
import time
from pathlib import Path

from langchain_core.tools import tool
from replan import declare_effects

HERE = Path(__file__).parent


@tool
def price(item: str) -> str:
    """The price of an item."""
    (HERE / "in-the-tool").write_text("")
    while not (HERE / "release-the-tool").exists():
        time.sleep(0.05)
    return f"{item} costs 4.20"


TOOLS = [declare_effects(price, read_only=True)]  # a look-up: made again after a stop
'''


@pytest.fixture(params=sorted(STOPS))
def stop(request: pytest.FixtureRequest) -> Callable[[Terminal], None]:
    """Ctrl-C on the terminal, or SIGTERM."""
    return STOPS[request.param]


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The folder the runs use (`./replan.sqlite`); in-process commands run there too."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    yield tmp_path


def _serve(server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment of a `replan` process using `server` (in-process commands use it too)."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    return cli_env(server)


def _stopped(terminal: Terminal, thread: str) -> None:
    """The process ended with 130, saying how to continue, with no traceback."""
    code = terminal.finish()
    shown = terminal.text()
    assert code == 130, shown
    assert f"replan: interrupted; continue with: replan resume --thread-id {thread}" in shown
    assert "Traceback" not in shown


def _appears(path: Path, terminal: Terminal, timeout: float = 60) -> bool:
    """Whether `path` comes to exist while the command runs (within `timeout`)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if terminal.process.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _status(capsys: pytest.CaptureFixture[str], thread: str) -> str:
    """The thread's status as `show` says it, once `threads` lists it the same way."""
    shown = invoke(capsys, "show", "--thread-id", thread)
    assert shown.code == 0, shown.err
    status = shown.out.splitlines()[1].removeprefix("Status: ")
    listed = invoke(capsys, "threads").out.splitlines()
    assert any(row.split()[0] == thread and f"  {status}  " in row for row in listed), listed
    return status


def _resumed(capsys: pytest.CaptureFixture[str], thread: str, *options: str) -> None:
    resumed = invoke(capsys, "resume", "--thread-id", thread, *options)
    assert resumed.code == 0, resumed.err
    assert "RESULT 1/2, RESULT 2/2" in resumed.out


def _planner_calls(server: ScriptedOpenAIServer) -> int:
    return [script.classify(request).role for request in server.requests].count("planner")


def test_during_a_model_request(
    here: Path,
    stop: Callable[[Terminal], None],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The case of the report: the replanner waits for the model (its request held)."""
    gate = Gate(call=script.Call("replanner"))
    with ScriptedOpenAIServer(gate) as server:
        args = [REPLAN, "run", *PLANNED, "Stop me in 2 steps", "--thread-id", "m"]
        terminal = Terminal(args, here, _serve(server, monkeypatch))
        try:
            assert gate.reached.wait(timeout=60), terminal.text()
            stop(terminal)
            _stopped(terminal, "m")
        finally:
            gate.release.set()
        assert _status(capsys, "m") == "interrupted at replanner"
        _resumed(capsys, "m")
        assert script.executor_steps(server.requests) == [1, 2]  # step 1 not done again


def test_during_a_tool_call_that_does_not_return(
    here: Path,
    stop: Callable[[Terminal], None],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The tool is still working when the process ends: it is not waited for."""
    (here / "slow_tools.py").write_text(TOOLS_FILE)
    with ScriptedOpenAIServer(looks_up_a_price) as server:
        args = [REPLAN, "run", *PLANNED, "Stop me in 2 steps", "--thread-id", "t"]
        terminal = Terminal(
            [*args, "--tools", "./slow_tools.py:TOOLS"], here, _serve(server, monkeypatch)
        )
        assert _appears(here / "in-the-tool", terminal), terminal.text()
        stop(terminal)
        _stopped(terminal, "t")  # the tool has not returned: nothing releases it yet
        assert _status(capsys, "t") == "interrupted at executor"
        (here / "release-the-tool").write_text("")
        _resumed(capsys, "t")
        assert _planner_calls(server) == 1


def test_during_a_checkpoint_write(
    here: Path,
    stop: Callable[[Terminal], None],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    gate = here / "writing"
    with ScriptedOpenAIServer(script.respond) as server:
        env = {**_serve(server, monkeypatch), "PYTHONPATH": str(ROOT)}
        args = ["run", *PLANNED, "Stop me in 2 steps", "--thread-id", "w"]
        held = [sys.executable, "-m", "tests.support.held_write", str(gate), *args]
        terminal = Terminal(held, here, env)
        assert _appears(gate, terminal), terminal.text()
        stop(terminal)
        _stopped(terminal, "w")
        assert _status(capsys, "w") == "interrupted after planner"
        _resumed(capsys, "w")
        assert _planner_calls(server) == 1  # the plan was kept


def test_at_the_approval_prompt(
    here: Path,
    stop: Callable[[Terminal], None],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with ScriptedOpenAIServer(script.respond) as server:
        args = [
            REPLAN,
            "run",
            *PLANNED,
            "Ask me in 2 steps",
            "--thread-id",
            "a",
            "--approve-plan",
        ]
        terminal = Terminal(args, here, _serve(server, monkeypatch))
        assert terminal.wait_for("Approve this plan? [a]pprove / [e]dit / [r]eject:")
        # A signal between the question and the read would only be seen once a line came in.
        assert blocked_reading_stdin(terminal.process.pid)
        stop(terminal)
        _stopped(terminal, "a")
        assert _status(capsys, "a") == "waiting for approval"
        _resumed(capsys, "a", "--approve")
        assert _planner_calls(server) == 1


def _ignoring_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_sigterm_while_sigint_is_ignored(
    here: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run a script started in the background (SIGINT ignored, as `cmd &` leaves it) still
    stops on SIGTERM the same way, during a model request."""
    gate = Gate(call=script.Call("replanner"))
    with ScriptedOpenAIServer(gate) as server:
        args = [REPLAN, "run", *PLANNED, "Stop me in 2 steps", "--thread-id", "b"]
        process = subprocess.Popen(
            args,
            cwd=here,
            env=_serve(server, monkeypatch),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=_ignoring_sigint,
        )
        try:
            assert gate.reached.wait(timeout=60)
            process.send_signal(signal.SIGTERM)
            shown, _ = process.communicate(timeout=60)
        finally:
            gate.release.set()
            process.kill()
        assert process.returncode == 130, shown
        assert "replan: interrupted; continue with: replan resume --thread-id b" in shown
        assert "Traceback" not in shown
        assert _status(capsys, "b") == "interrupted at replanner"
        _resumed(capsys, "b")
