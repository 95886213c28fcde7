"""The graphs aegra.json serves (graphs/served.py), without a server."""

from __future__ import annotations

import inspect

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel

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


def test_a_served_graph_is_the_compiled_graph_rebuilt_through_its_public_constructor() -> None:
    """`served` passes the compiled graph's constructor every argument it takes, read from the
    public attribute of its name: when LangGraph's constructor changes, so must `served`."""
    not_kept = {"self", "kwargs", "deprecated_kwargs", "auto_validate"}
    taken = {
        name
        for cls in (CompiledStateGraph, Pregel)
        for name in inspect.signature(cls.__init__).parameters
    } - not_kept
    carried = set(served.CARRIED_OVER)
    assert taken == carried, (
        f"LangGraph's compiled graph constructor now takes {sorted(taken - carried)} more and "
        f"{sorted(carried - taken)} no longer: update graphs/served.py's CARRIED_OVER"
    )
    graph = build_plan_execute_graph()
    rebuilt = served.served(graph)
    assert type(rebuilt) is served.ServedGraph
    assert vars(rebuilt) == {k: v for k, v in vars(graph).items() if k != "__orig_class__"}


def test_the_shared_graph_needs_a_database_and_says_which_variables() -> None:
    with pytest.raises(RuntimeError, match="REPLAN_TASK_STORE .*DATABASE_URL"):
        served.shared_task_store({})


def test_the_shared_list_takes_the_servers_database_url_without_its_driver() -> None:
    store = served.shared_task_store(
        {"DATABASE_URL": "postgresql+asyncpg://u@db:5433/aegra", "REPLAN_TASK_LIST": "team"}
    )
    assert store.list_name == "team"
    assert store.location == "shared task list 'team' in PostgreSQL at db:5433/aegra"
