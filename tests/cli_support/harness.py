"""Run `replan` in-process or as a real subprocess against a scripted model server."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from replan.graphs.cli import main
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


def cli_env(server: ScriptedOpenAIServer) -> dict[str, str]:
    """The environment of a `replan` subprocess talking to `server`."""
    env = {**os.environ, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": server.base_url}
    env.pop("REPLAN_DB", None)
    return env


def start_cli(server: ScriptedOpenAIServer, cwd: Path, *args: str) -> subprocess.Popen[str]:
    """Start `replan ARGS` in `cwd`, capturing its output."""
    return subprocess.Popen(
        [REPLAN, *args],
        cwd=cwd,
        env=cli_env(server),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str], timeout: float = 60) -> Outcome:
    """Wait for a started `replan` process and collect its outcome."""
    out, err = process.communicate(timeout=timeout)
    return Outcome(process.returncode, out, err)


def run_cli(server: ScriptedOpenAIServer, cwd: Path, *args: str) -> Outcome:
    """Run `replan ARGS` as a subprocess to completion."""
    return finish(start_cli(server, cwd, *args))


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
