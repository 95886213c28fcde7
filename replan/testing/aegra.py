"""Aegra servers for tests and benchmarks of served graphs, on 127.0.0.1.

- `find_python()`: a Python 3.12 or later (`$REPLAN_AEGRA_PYTHON`, `python3.12`/`python3.13`
  on the PATH, or a pyenv installation); Aegra 0.11 needs it, the caller's Python may be older.
- `ensure_venv(python, venv, project)`: a virtual environment with `project[server]` installed
  (editable), made once and again only when the project's pyproject.toml changes.
- `aegra_database(server_url)`: a new PostgreSQL database, dropped on exit.
- `aegra_server(aegra, config, env, log)`: `aegra serve` in its own process group, ready when
  `/health` answers; SIGKILLed (the whole group) on exit or by `kill()`.
- `start_runs_at_once` / `finish_all`: many runs through langgraph-sdk clients.

Each group of servers gets its own Redis queue and channel prefix (`redis_names`), so
concurrent sessions on one Redis never take each other's runs. Only the standard library is
imported at module level (psycopg and langgraph-sdk on use), so any Python can run
`python -m replan.testing.aegra --venv DIR PROJECT` to prepare an environment ahead.
"""

from __future__ import annotations

import argparse
import fcntl
import glob
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from langgraph_sdk.client import SyncLangGraphClient
    from langgraph_sdk.schema import Run

PYTHON_ENV = "REPLAN_AEGRA_PYTHON"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
MINIMUM_PYTHON = (3, 12)
STARTUP_TIMEOUT = 90.0
OFFLINE_ENV = {
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "OTEL_TARGETS": "",
    "CRON_ENABLED": "false",
}


def _version(python: str) -> tuple[int, int] | None:
    try:
        done = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = done.stdout.split()
    return (int(parts[0]), int(parts[1])) if done.returncode == 0 and len(parts) == 2 else None


def find_python() -> str | None:
    """A Python interpreter of at least `MINIMUM_PYTHON`, or None."""
    candidates = [os.environ.get(PYTHON_ENV, "")]
    candidates += [shutil.which(name) or "" for name in ("python3.12", "python3.13")]
    pyenv_root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/3.1[2-9]*/bin/python3"))
    for python in filter(None, candidates):
        version = _version(python)
        if version is not None and version >= MINIMUM_PYTHON:
            return python
    return None


def _stamp(project: Path) -> str:
    """What an environment was installed from (the project's pyproject.toml, hashed)."""
    return hashlib.sha256((project / "pyproject.toml").read_bytes()).hexdigest()


def ensure_venv(python: str, venv: Path, project: Path) -> Path:
    """`venv` with `project[server]` installed, made with `python` when missing or out of
    date; returns its `aegra` command. Concurrent callers wait for each other (a lock file)."""
    aegra, stamp = venv / "bin" / "aegra", venv / ".replan-installed"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{venv}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if aegra.exists() and stamp.exists() and stamp.read_text() == _stamp(project):
            return aegra
        subprocess.run([python, "-m", "venv", "--clear", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, "-e", f"{project}[server]"], check=True)
        stamp.write_text(_stamp(project))
    return aegra


def redis_problem(url: str) -> str:
    """Why the Redis server at `url` cannot be used ("" when it answers PING)."""
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "", parts.port or 6379), 5) as conn:
            conn.sendall(b"PING\r\n")
            answer = conn.recv(64)
    except OSError as exc:
        return f"no Redis server answers at {url} ({exc})"
    return "" if answer.startswith(b"+PONG") else f"Redis at {url} answered {answer!r}"


def redis_names() -> dict[str, str]:
    """A Redis queue and channel prefix of their own for one group of servers."""
    tag = uuid.uuid4().hex[:12]
    return {
        "WORKER_QUEUE_KEY": f"replan-test:{tag}:jobs",
        "REDIS_CHANNEL_PREFIX": f"replan-test:{tag}:",
    }


def with_database(url: str, name: str) -> str:
    """`url` naming database `name`."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


@contextmanager
def aegra_database(server_url: str) -> Iterator[str]:
    """The URL of a new database on the server of `server_url`; dropped (its connections
    closed first) on exit."""
    import psycopg
    from psycopg import sql

    name = f"replan_aegra_{uuid.uuid4().hex[:12]}"
    admin = with_database(server_url, "postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield with_database(server_url, name)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))


def aegra_env(
    database_url: str, redis: str, names: Mapping[str, str], extra: Mapping[str, str]
) -> dict[str, str]:
    """The environment of an Aegra server: this one without API keys or replan/LangSmith
    settings, offline, on `database_url` with the Redis broker, plus `extra`."""
    kept = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "LANGSMITH_", "LANGCHAIN_", "REPLAN_", "VIRTUAL_ENV"))
    }
    broker = {"DATABASE_URL": database_url, "REDIS_BROKER_ENABLED": "true", "REDIS_URL": redis}
    return {**kept, **OFFLINE_ENV, **broker, **names, **extra}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class AegraServer:
    """A running `aegra serve` process group: its URL and log file."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_tail(self) -> str:
        """The end of the server's log (for failure messages)."""
        return self.log.read_text(errors="replace")[-5000:]

    def log_count(self, text: str) -> int:
        """How many lines of the server's log contain `text`."""
        return sum(text in line for line in self.log.read_text(errors="replace").splitlines())

    def kill(self) -> None:
        """SIGKILL the whole process group (the CLI and its uvicorn) and wait for it."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=30)


def wait_until_ready(
    what: str,
    url: str,
    process: subprocess.Popen[Any],
    log_tail: Callable[[], str],
    timeout: float = STARTUP_TIMEOUT,
) -> None:
    """Wait until `url` answers HTTP 200; RuntimeError with the log's tail when the `what`
    server process exits first or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}:\n{log_tail()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    raise RuntimeError(f"{what} not ready after {timeout:g} s:\n{log_tail()}")


@contextmanager
def aegra_server(
    aegra: Path, config: Path, env: Mapping[str, str], log: Path
) -> Iterator[AegraServer]:
    """`aegra serve` with `config` (aegra.json) on a free port, run in `log`'s folder; yields
    once it is ready, kills its process group on exit."""
    port = free_port()
    command = [str(aegra), "serve", "--config", str(config), "--host", "127.0.0.1"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, "--port", str(port)],
            cwd=log.parent,
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = AegraServer(f"http://127.0.0.1:{port}", process, log)
    try:
        wait_until_ready("aegra", f"{server.url}/health", server.process, server.log_tail)
        yield server
    finally:
        server.kill()


@dataclass(frozen=True)
class StartedRun:
    """A run started through one server's SDK client."""

    client: SyncLangGraphClient
    thread_id: str
    run_id: str


def start_runs_at_once(
    clients: Sequence[SyncLangGraphClient],
    objectives: Sequence[str],
    graph: str,
    context: Mapping[str, Any] | None = None,
) -> list[StartedRun]:
    """Start a run per objective, each on a new thread, all at once (one SDK call each, in
    parallel), through the clients in turn, each with the run `context` given."""

    def start(index: int) -> StartedRun:
        client = clients[index % len(clients)]
        thread_id = str(client.threads.create()["thread_id"])
        objective: dict[str, Any] = {"messages": [{"role": "user", "content": objectives[index]}]}
        run = client.runs.create(thread_id, graph, input=objective, context=dict(context or {}))
        return StartedRun(client, thread_id, str(run["run_id"]))

    with ThreadPoolExecutor(max_workers=len(objectives)) as pool:
        return list(pool.map(start, range(len(objectives))))


def finish_all(runs: Sequence[StartedRun]) -> list[Run]:
    """Wait for every run to end; their records, in order."""
    for run in runs:
        run.client.runs.join(run.thread_id, run.run_id)
    return [run.client.runs.get(run.thread_id, run.run_id) for run in runs]


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """The `--postgres` and `--redis` options of a benchmark that starts Aegra servers."""
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")


def prepared_aegra(redis: str, project: Path) -> Path:
    """The `aegra` command of `project`'s `.venv-aegra/` (made if missing), once Python 3.12+
    and the Redis server at `redis` are there; SystemExit saying what is missing."""
    python = find_python()
    if python is None:
        raise SystemExit(f"no Python 3.12 or later found (set {PYTHON_ENV})")
    if problem := redis_problem(redis):
        raise SystemExit(problem)
    return ensure_venv(python, project / ".venv-aegra", project)


def main(argv: Sequence[str] | None = None) -> None:
    """Prepare an Aegra environment ahead (CI starts this while it installs the rest)."""
    parser = argparse.ArgumentParser(description="make or update an Aegra environment")
    parser.add_argument("--venv", type=Path, required=True)
    parser.add_argument("project", type=Path, help="the project to install with [server]")
    args = parser.parse_args(argv)
    python = find_python()
    if python is None:
        raise SystemExit(f"no Python 3.12 or later found (set {PYTHON_ENV})")
    print(ensure_venv(python, args.venv.resolve(), args.project.resolve()))


if __name__ == "__main__":
    main()
