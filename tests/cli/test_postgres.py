"""`replan` runs kept in PostgreSQL: shared by processes with nothing on their local disk,
handed from one working folder to another, and failing in one line when the server is gone.

The runs of two processes at once and a SIGKILLed run resumed from the database are the
`postgres` cases of tests/cli/test_concurrency.py and tests/cli/test_crash.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.runnables import RunnableConfig

from replan.cli.output import ExitCode
from replan.graphs.context import Context
from replan.graphs.dev_checkpointer import dev_checkpointer
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support import pg_support
from tests.support.cli_harness import (
    PLANNED,
    Gate,
    finish,
    invoke,
    run_cli,
    start_cli,
    stored_steps,
)

DATABASE_UNAVAILABLE = ExitCode.DATABASE_UNAVAILABLE


def folders(root: Path, *names: str) -> list[Path]:
    """Empty working folders, one per simulated machine."""
    made = [root / name for name in names]
    for folder in made:
        folder.mkdir()
    return made


@pytest.mark.slow
def test_a_run_started_in_one_folder_is_resumed_from_another(
    tmp_path: Path, postgres_url: str
) -> None:
    first, second, third = folders(tmp_path, "first", "second", "third")
    with ScriptedOpenAIServer(script.respond) as server:
        started = run_cli(
            server,
            first,
            "run",
            *PLANNED,
            "Hand over in 2 steps",
            "--thread-id",
            "h1",
            "--approve-plan",
            "--db",
            postgres_url,
        )
        assert started.code == 4, started.err  # waits for approval (no terminal)
        assert "Step 1:" not in started.err
        hint = started.err.split("Answer with: ", 1)[1].split(" --approve |", 1)[0]

        # Another machine, in its own folder, runs the command the first one printed.
        command = shlex.split(hint)
        assert command[:3] == ["replan", "resume", "--thread-id"]
        resumed = run_cli(server, second, *command[1:], "--approve")
        assert resumed.code == 0, resumed.err
        assert "RESULT 1/2, RESULT 2/2" in resumed.out
        listed = run_cli(server, third, "threads", "--json", replan_db=postgres_url)  # REPLAN_DB
    assert listed.code == 0, listed.err
    assert [(r["thread_id"], r["status"], r["objective"]) for r in json.loads(listed.out)] == [
        ("h1", "finished", "Hand over in 2 steps")
    ]
    assert script.executor_steps(server.requests) == [1, 2]
    assert stored_steps(["--db", postgres_url], "h1") == [
        script.step_text(i, 2, "hand over in 2 steps") for i in (1, 2)
    ]
    assert [list(folder.iterdir()) for folder in (first, second, third)] == [[], [], []]


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgresql://postgres@127.0.0.1:1/test", "Connection refused"),
        ("postgres://postgres:s3cret@127.0.0.1:1/test", "postgres://postgres:***@127.0.0.1:1"),
        ("postgresql://postgres@127.0.0.1:1/test?bogus=1", 'invalid URI query parameter: "bogus"'),
        ("mysql://root@127.0.0.1/test", "unsupported database URL scheme 'mysql'"),
    ],
)
@pytest.mark.parametrize("command", ["run", "resume", "show", "threads"])
def test_an_unusable_database_url_is_one_line_and_exit_code_7(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    url: str,
    says: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")  # without one, `run` stops before the database
    args = {"run": ["objective"], "resume": ["--thread-id", "x"], "show": ["--thread-id", "x"]}
    outcome = invoke(capsys, command, *args.get(command, []), "--db", url)
    assert outcome.code == DATABASE_UNAVAILABLE
    assert outcome.out == ""
    assert outcome.err.count("\n") == 1 and outcome.err.startswith("replan: "), outcome.err
    assert says in outcome.err and "s3cret" not in outcome.err


@pytest.mark.slow
def test_a_missing_database_on_a_live_server_is_reported_by_a_real_process(
    tmp_path: Path, postgres_url: str
) -> None:
    missing = pg_support.with_database(postgres_url, "replan_no_such_database")
    with ScriptedOpenAIServer(script.respond) as server:
        outcome = run_cli(server, tmp_path, "run", *PLANNED, "Anything", "--db", missing)
    assert outcome.code == DATABASE_UNAVAILABLE
    (line,) = outcome.err.splitlines()
    assert line.startswith(f"replan: cannot open the runs database {missing}: ")
    assert line.endswith('database "replan_no_such_database" does not exist')
    assert server.requests == []


@pytest.mark.slow
def test_losing_the_server_mid_run_is_one_line_and_the_run_resumes(
    tmp_path: Path, postgres_url: str
) -> None:
    gate = Gate(step=2)
    with ScriptedOpenAIServer(gate) as server:
        args = ("--thread-id", "lost", "--db", postgres_url)
        run = start_cli(server, tmp_path, "run", *PLANNED, "Lose the server in 3 steps", *args)
        try:
            assert gate.reached.wait(timeout=60), finish(run, timeout=5)
            schema = pg_support.schema_of(postgres_url)
            assert pg_support.terminate_connections(schema) == 2  # the saver's, the store's
        finally:
            gate.release.set()
        lost = finish(run)
        assert lost.code == DATABASE_UNAVAILABLE, lost.err
        *progress, error = lost.err.splitlines()
        assert f"Step 2: {script.step_text(2, 3, 'lose the server in 3')}" in progress
        assert "Traceback" not in lost.err
        assert error.startswith(f"replan: lost the connection to the runs database {postgres_url}:")

        resumed = run_cli(server, tmp_path, "resume", *args)
        assert resumed.code == 0, resumed.err
        assert "RESULT 1/3, RESULT 2/3, RESULT 3/3" in resumed.out
    assert script.executor_steps(server.requests) == [1, 2, 2, 3]
    assert stored_steps(["--db", postgres_url], "lost") == [
        script.step_text(i, 3, "lose the server in 3") for i in (1, 2, 3)
    ]


def test_the_dev_checkpointer_follows_replan_dev_db_to_postgres(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], postgres_url: str
) -> None:
    monkeypatch.setenv("REPLAN_DEV_DB", postgres_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")

    async def run_as_the_dev_server(base_url: str) -> None:
        async with dev_checkpointer() as saver:
            graph = build_plan_execute_graph(checkpointer=saver)
            config: RunnableConfig = {"configurable": {"thread_id": "studio"}}
            objective = {"messages": [("user", "From Studio in 2 steps")]}
            await graph.ainvoke(objective, config, context=Context(base_url=base_url))

    with ScriptedOpenAIServer(script.respond) as server:
        asyncio.run(run_as_the_dev_server(server.base_url))
    listed = json.loads(invoke(capsys, "threads", "--json", "--db", postgres_url).out)
    assert [(r["thread_id"], r["status"], r["objective"]) for r in listed] == [
        ("studio", "finished", "From Studio in 2 steps")
    ]


@pytest.mark.slow
def test_without_the_postgres_extra_the_core_imports_and_a_url_says_what_to_install() -> None:
    code = (
        "import sys\n"
        "for name in ('psycopg', 'psycopg_pool'):\n"
        "    sys.modules[name] = None  # as if `replan[postgres]` were not installed\n"
        "import replan.state.plans, replan.graphs.dev_checkpointer\n"
        "from replan.cli import main\n"
        "try:\n"
        "    replan.state.plans.PostgresPlanStorage\n"
        "except ImportError as exc:\n"
        "    print(exc, file=sys.stderr)\n"
        "sys.exit(main(['threads', '--db', 'postgresql://postgres@127.0.0.1/test']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ)
    )
    assert done.returncode == DATABASE_UNAVAILABLE, done.stderr
    assert done.stderr.splitlines() == [
        "PostgresPlanStorage needs psycopg 3 and psycopg-pool: pip install 'replan[postgres]'",
        "replan: cannot open the runs database postgresql://postgres@127.0.0.1/test: "
        "PostgreSQL support is not installed (pip install 'replan[postgres]')",
    ]
