"""Run `replan` in-process or as a real subprocess against a scripted model server."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest
from langchain_core.runnables import RunnableConfig

from replan.cli import main
from replan.graphs.persistence import DEFAULT_DB, open_checkpointer
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.testing import Reply, ScriptedOpenAIServer, tool_call
from replan.testing import plan_script as script

REPLAN = str(Path(sys.executable).with_name("replan"))
"""The console script `pip install -e .` puts next to the interpreter."""
PRICE_TOOLS = '''
from langchain_core.tools import tool


@tool
def price(item: str) -> str:
    """The price of an item."""
    return f"{item} costs 4.20"


TOOLS = [price]
'''
"""A tools file for `--tools FILE:TOOLS`: one tool, `price`."""


def looks_up_a_price(request: dict[str, Any]) -> Reply:
    """The scripted model, whose executor calls `price` before reporting step 1."""
    call = script.classify(request)
    used_a_tool = any(m.get("role") == "tool" for m in request.get("messages", []))
    if call.role == "executor" and call.step == 1 and not used_a_tool:
        return tool_call("price", {"item": "A"})
    return script.respond(request)


@dataclass(frozen=True)
class Outcome:
    """Exit code and captured output of one `replan` invocation."""

    code: int
    out: str
    err: str


def cli_env(
    server: ScriptedOpenAIServer | None = None, replan_db: str | None = None
) -> dict[str, str]:
    """The environment of a `replan` subprocess talking to `server` (or to no server), with
    `REPLAN_DB` set to `replan_db` when given."""
    env = {**os.environ, "OPENAI_API_KEY": "test"}  # the session fixture cleared the rest
    if server is not None:
        env["OPENAI_BASE_URL"] = server.base_url
    if replan_db is not None:
        env["REPLAN_DB"] = replan_db
    return env


def start_cli(
    server: ScriptedOpenAIServer | None,
    cwd: Path,
    *args: str,
    stdin: int | IO[Any] = subprocess.DEVNULL,
    env: dict[str, str] | None = None,
    replan_db: str | None = None,
    **popen: Any,
) -> subprocess.Popen[bytes]:
    """Start `replan ARGS` in `cwd`, capturing its output (stdin: nothing, unless given;
    `REPLAN_DB`: `replan_db`)."""
    return subprocess.Popen(
        [REPLAN, *args],
        cwd=cwd,
        env=env or cli_env(server, replan_db),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen,
    )


def finish(
    process: subprocess.Popen[bytes], timeout: float = 60, input: bytes | None = None
) -> Outcome:
    """Wait for a started `replan` process and collect its outcome."""
    out, err = process.communicate(input, timeout=timeout)
    return Outcome(process.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


def finish_all(processes: dict[str, subprocess.Popen[bytes]], timeout: float) -> dict[str, Outcome]:
    """Wait for started `replan` processes, each within `timeout`; when one does not end,
    kill them all and fail with what each had printed on stderr (the one that hangs may be
    waiting for another that failed)."""
    try:
        return {name: finish(process, timeout) for name, process in processes.items()}
    except subprocess.TimeoutExpired:
        for process in processes.values():
            process.kill()
        errors = {name: finish(process).err[-2000:] for name, process in processes.items()}
        message = f"a run did not end within {timeout:.0f} s; their stderr: {errors}"
        raise AssertionError(message) from None


def run_cli(
    server: ScriptedOpenAIServer | None,
    cwd: Path,
    *args: str,
    input: bytes | None = None,
    replan_db: str | None = None,
) -> Outcome:
    """Run `replan ARGS` as a subprocess to completion (`input` on its stdin)."""
    stdin = subprocess.PIPE if input is not None else subprocess.DEVNULL
    return finish(start_cli(server, cwd, *args, stdin=stdin, replan_db=replan_db), input=input)


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
    """A responder that holds the first request of `call` until released (default: the
    executor's request for `step`)."""

    def __init__(self, step: int | None = None, call: script.Call | None = None) -> None:
        self.call = call or script.Call("executor", step)
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, request: dict[str, Any]) -> Reply:
        if script.classify(request) == self.call and not self.reached.is_set():
            self.reached.set()
            self.release.wait(timeout=60)
        return script.respond(request)

    def signal_when_held(self, process: subprocess.Popen[bytes], signum: int) -> Outcome:
        """Once the request is held, send `signum` to `process`; then let the request go."""
        try:
            assert self.reached.wait(timeout=60), finish(process, timeout=5)
        finally:
            process.send_signal(signum)
            outcome = finish(process)
            self.release.set()
        return outcome


class Lines:
    """What a running process writes to one of its pipes, read line by line as it comes."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.lines: list[str] = []
        self.closed = False
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            with self.changed:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self.changed.notify_all()
        with self.changed:
            self.closed = True
            self.changed.notify_all()

    def wait_for(self, text: str, timeout: float = 60) -> bool:
        """Whether a line containing `text` came (waiting for it until the stream closes)."""
        with self.changed:
            self.changed.wait_for(lambda: self.closed or self.has(text), timeout)
            return self.has(text)

    def has(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def text(self) -> str:
        """Everything read, once the stream has closed."""
        self.reader.join(timeout=60)
        return "\n".join(self.lines) + "\n" if self.lines else ""


READ_SYSCALL = {"x86_64": 0, "aarch64": 63}


def blocked_reading_stdin(pid: int, timeout: float = 60) -> bool:
    """Wait until process `pid` sits in read(0, ...) (Linux: /proc/PID/syscall)."""
    number = READ_SYSCALL.get(os.uname().machine)
    if number is None:
        pytest.skip("needs the read syscall number of this machine")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/syscall").read_text().startswith(f"{number} 0x0 "):
                return True
        except OSError:
            pytest.skip("needs /proc/PID/syscall")
        time.sleep(0.02)
    return False


PLANNED = ("--task-tools", "compact")
"""`replan run` options that give a run something to plan with: the task tools (a run with no
tools at all is answered in one request)."""


@contextmanager
def serving_tools(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tools: dict[str, str], responder: Any
) -> Iterator[ScriptedOpenAIServer]:
    """The scripted server answering with `responder`; the CLI runs in `tmp_path/work`, which
    holds the tool modules `tools` gives (file name: source), with its runs in `tmp_path`."""
    (tmp_path / "work").mkdir()
    for name, source in tools.items():
        (tmp_path / "work" / name).write_text(source)
    with ScriptedOpenAIServer(responder) as srv:
        monkeypatch.chdir(tmp_path / "work")
        monkeypatch.setenv("REPLAN_DB", str(tmp_path / "runs.sqlite"))
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        yield srv
