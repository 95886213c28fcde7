"""What `replan show` and `replan threads` import, seen in a process of their own.

Their start-up target (under 0.5 s on an idle two-core machine, `benchmarks/bench_cli_startup.py`)
needs them to load neither the model client nor LangGraph's graph layer (`langgraph.graph` and
`langgraph.pregel`, which alone take over 1 s to import). They load no model client. They still
load the graph layer, marked as expected failures until these imports go: the runs are read
through `stored_runs.reading_graph` (a compiled `StateGraph`), and the modules a report needs
import it too: `replan.graphs.graph_state` (`add_messages` from `langgraph.graph`; its reducers
from `replan.graphs.plan.task_merge`, which imports `replan.tools`, whose task tools import
`langgraph.prebuilt`), `replan.graphs.plan.views` (`replan.tools.task_state`) and
`replan.graphs.persistence.checkpoint_serializer` (`replan.tools.task_tools`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, cli_env, run_cli

pytestmark = pytest.mark.slow  # processes of their own

NOT_LOADED = ("langgraph.graph", "langgraph.pregel", "langchain_openai")
"""What `show` and `threads` must not import."""
GRAPH_LAYER = pytest.mark.xfail(
    strict=True,
    reason="runs are read through reading_graph; graph_state, plan.views and "
    "checkpoint_serializer import the graph layer (see the module docstring)",
)
READ = """
import json, sys
import replan.cli.summary
from replan.cli import main
for args in (["show", "--thread-id", "done"], ["show", "--thread-id", "waiting", "--json"],
             ["threads"], ["threads", "--json"]):
    assert main(args) == 0, args
print(json.dumps([name for name in {names!r} if name in sys.modules]))
"""
"""Import `replan.cli.summary`, show a finished run and a plan waiting for approval, list the
runs (as a table and as JSON), then print which of `names` are loaded."""


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Which of `NOT_LOADED` a process that only reads stored runs has loaded."""
    folder: Path = tmp_path_factory.mktemp("runs")
    with ScriptedOpenAIServer(script.respond) as server:
        done = ("Done in 2 steps", "--thread-id", "done", "--quiet")
        assert run_cli(server, folder, "run", *PLANNED, *done).code == 0
        waiting = ("Wait in 2 steps", "--thread-id", "waiting", "--approve-plan", "--quiet")
        assert run_cli(server, folder, "run", *PLANNED, *waiting).code == 4
    code = READ.format(names=NOT_LOADED)
    read = subprocess.run(
        [sys.executable, "-c", code],
        cwd=folder,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert read.returncode == 0, read.stderr
    names: list[str] = json.loads(read.stdout.splitlines()[-1])
    return names


@pytest.mark.parametrize(
    "module",
    [
        pytest.param("langgraph.graph", marks=GRAPH_LAYER),
        pytest.param("langgraph.pregel", marks=GRAPH_LAYER),
        "langchain_openai",
    ],
)
def test_reading_stored_runs_does_not_import(loaded: list[str], module: str) -> None:
    assert module not in loaded
