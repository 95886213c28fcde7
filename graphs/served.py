"""The graphs an Agent Protocol server serves to many users (Aegra: see aegra.json and
docs/serving.md).

Both are built on first access, not at import:

- `graph`: the plan–execute graph; each run keeps its task list in its own state.
- `shared_graph`: the same graph whose task tools keep one list
  shared by every run, in PostgreSQL: `$REPLAN_TASK_STORE` (a `postgresql://` URL), else the
  server's own database (`$DATABASE_URL`); the list is named by `$REPLAN_TASK_LIST` (default
  "default").

A server attaches its own saver to a graph by copying it (`graph.copy(update={"checkpointer":
saver})`, as Aegra does). Both graphs are `ServedGraph`s, whose copies make that saver read and
write with replan's checkpoint serializer, so task lists come back out of checkpoints by intent
(LangGraph's default serializer lets them through with a warning today and will refuse
unregistered types in a future version).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from typing import Any, cast

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from replan.graphs.persistence import with_checkpoint_serializer
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.state.task_stores.postgres import PostgresTaskStore

TASK_STORE_ENV = "REPLAN_TASK_STORE"
TASK_LIST_ENV = "REPLAN_TASK_LIST"
SERVER_DATABASE_ENV = "DATABASE_URL"
"""Aegra's database (it may name a driver, `postgresql+asyncpg://`; psycopg takes neither)."""
DEFAULT_TASK_LIST = "default"
SERVED = ("graph", "shared_graph")
"""The graphs this module serves (aegra.json names them)."""
_DRIVER = re.compile(r"^(postgres(?:ql)?)\+[A-Za-z0-9_]+://")


class ServedGraph(CompiledStateGraph[Any, Any, Any, Any]):
    """A compiled graph whose copies give an attached saver replan's checkpoint serializer."""

    def copy(self, update: dict[str, Any] | None = None) -> ServedGraph:
        """A copy with `update` applied; a saver in it reads and writes replan's types."""
        changes = dict(update or {})
        saver = changes.get("checkpointer")
        if isinstance(saver, BaseCheckpointSaver):
            changes["checkpointer"] = with_checkpoint_serializer(saver)
        return super().copy(changes)


def served(graph: CompiledStateGraph[Any, Any, Any, Any]) -> ServedGraph:
    """`graph`, as the public builder made it, turned into a `ServedGraph` (a subclass that adds
    no attribute, only what its copies do): nothing is rebuilt or copied."""
    graph.__class__ = ServedGraph
    return cast(ServedGraph, graph)


def shared_task_store(environ: Mapping[str, str] = os.environ) -> PostgresTaskStore:
    """The shared list `shared_graph`'s task tools use (see the module docstring); no
    connection is opened before the first task tool call."""
    url = environ.get(TASK_STORE_ENV) or environ.get(SERVER_DATABASE_ENV)
    if not url:
        raise RuntimeError(
            f"the shared task list needs a PostgreSQL database: set {TASK_STORE_ENV} (or "
            f"{SERVER_DATABASE_ENV}) to a postgresql:// URL"
        )
    name = environ.get(TASK_LIST_ENV) or DEFAULT_TASK_LIST
    return PostgresTaskStore(_DRIVER.sub(r"\1://", url), list_name=name)


@functools.cache
def _built(name: str) -> ServedGraph:
    """The served graph `name`, built once (see the module docstring)."""
    if name == "shared_graph":
        return served(build_plan_execute_graph(task_store=shared_task_store()))
    return served(build_plan_execute_graph())


def __getattr__(name: str) -> Any:
    """`graph` and `shared_graph`, built on first use: importing this module compiles nothing
    (and `shared_graph` needs a database)."""
    if name not in SERVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _built(name)
