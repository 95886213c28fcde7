"""The graphs aegra.json serves (graphs/served.py), without a server."""

from __future__ import annotations

import subprocess
import sys

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from replan.graphs import served
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.state import TaskContext


def test_a_saver_a_server_attaches_reads_task_lists_back_with_replans_serializer() -> None:
    strict = JsonPlusSerializer(allowed_msgpack_modules=None)  # refuses unregistered types
    attached = InMemorySaver(serde=strict)  # made by the server, with its own serializer
    graph = served.graph.copy(update={"checkpointer": attached})  # as Aegra attaches it
    assert isinstance(graph, served.ServedGraph) and graph.with_config({}).__class__ is type(graph)
    tasks = TaskContext()
    tasks.create("Announce the release", "Write to the mailing list.")
    stored = strict.dumps_typed(tasks)
    assert strict.loads_typed(stored) != tasks  # the server's own serializer would lose it
    assert isinstance(graph.checkpointer, InMemorySaver)
    assert graph.checkpointer.serde.loads_typed(stored) == tasks
    assert graph.checkpointer.storage is attached.storage  # the same saver's data


def test_a_served_graph_is_the_graph_the_public_builder_made() -> None:
    graph = build_plan_execute_graph()
    kept = dict(vars(graph))
    made = served.served(graph)
    assert made is graph and type(made) is served.ServedGraph
    assert vars(made) == kept  # nothing rebuilt, nothing added
    assert type(made.copy()) is served.ServedGraph and vars(made.copy()) == kept


@pytest.mark.parametrize("module", ["replan.graphs.served", "replan.graphs.plan_execute"])
def test_importing_the_served_modules_compiles_no_graph(module: str) -> None:
    """The graphs langgraph.json and aegra.json name are built on first access."""
    script = (
        "import langgraph.graph.state as state, importlib\n"
        "compiled = []\n"
        "original = state.StateGraph.compile\n"
        "def counted(self, *args, **kwargs):\n"
        "    compiled.append(1)\n"
        "    return original(self, *args, **kwargs)\n"
        "state.StateGraph.compile = counted\n"
        f"module = importlib.import_module({module!r})\n"
        "assert not compiled, 'compiled at import'\n"
        "module.graph\n"
        "assert compiled, 'not built on access'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_shared_graph_needs_a_database_and_says_which_variables() -> None:
    with pytest.raises(RuntimeError, match="REPLAN_TASK_STORE .*DATABASE_URL"):
        served.shared_task_store({})


def test_the_shared_list_takes_the_servers_database_url_without_its_driver() -> None:
    store = served.shared_task_store(
        {"DATABASE_URL": "postgresql+asyncpg://u@db:5433/aegra", "REPLAN_TASK_LIST": "team"}
    )
    assert store.list_name == "team"
    assert store.location == "shared task list 'team' in PostgreSQL at db:5433/aegra"
