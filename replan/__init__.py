"""replan: a plan–execute–replan agent, task tools and shared plan documents for LangGraph.

The layers are `replan.state` (typed data and pure operations), `replan.tools` (LangChain tools)
and `replan.graphs` (the graph, its prompts, runtime `Context` and the CLI). The names most users
need are importable from here; each is loaded on first use, so `import replan.state` stays free
of LangGraph and `import replan` works without the optional `langchain` package, which only the
`create_agent` middleware (`TaskToolsMiddleware`, `TextCallRecoveryMiddleware`) needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from replan.graphs.context import Context
    from replan.graphs.durable_calls import idempotency_key
    from replan.graphs.model.text_call_middleware import TextCallRecoveryMiddleware
    from replan.graphs.persistence import checkpoint_serializer
    from replan.graphs.plan_execute import build_plan_execute_graph
    from replan.state.task_stores.filesystem import FileTaskStore
    from replan.state.task_stores.postgres import PostgresTaskStore
    from replan.state.tasks import TaskContext
    from replan.tools.effects import ToolEffects, declare_effects
    from replan.tools.plan_tools import plan_tools
    from replan.tools.task_middleware import TaskToolsMiddleware
    from replan.tools.task_state import TasksState
    from replan.tools.task_tools import task_tools

_SURFACE = {
    "Context": "replan.graphs.context",
    "FileTaskStore": "replan.state.task_stores.filesystem",
    "PostgresTaskStore": "replan.state.task_stores.postgres",
    "TaskContext": "replan.state.tasks",
    "TaskToolsMiddleware": "replan.tools.task_middleware",
    "TasksState": "replan.tools.task_state",
    "TextCallRecoveryMiddleware": "replan.graphs.model.text_call_middleware",
    "ToolEffects": "replan.tools.effects",
    "build_plan_execute_graph": "replan.graphs.plan_execute",
    "checkpoint_serializer": "replan.graphs.persistence",
    "declare_effects": "replan.tools.effects",
    "idempotency_key": "replan.graphs.durable_calls",
    "plan_tools": "replan.tools.plan_tools",
    "task_tools": "replan.tools.task_tools",
}

__all__ = [
    "Context",
    "FileTaskStore",
    "PostgresTaskStore",
    "TaskContext",
    "TaskToolsMiddleware",
    "TasksState",
    "TextCallRecoveryMiddleware",
    "ToolEffects",
    "build_plan_execute_graph",
    "checkpoint_serializer",
    "declare_effects",
    "idempotency_key",
    "plan_tools",
    "task_tools",
]


def __getattr__(name: str) -> Any:
    """Load a surface name from its module on first access."""
    if name not in _SURFACE:
        raise AttributeError(f"module 'replan' has no attribute {name!r}")
    value = getattr(importlib.import_module(_SURFACE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_SURFACE])
