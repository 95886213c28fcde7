"""The LLM-facing surface of replan: LangChain tools over the `replan.state` layer.

`TaskToolsMiddleware` (for `langchain.agents.create_agent`) is loaded on first use, so this
package imports without the optional `langchain` dependency (`agent_middleware_api` imports it
for replan's middleware). `effects` says what tools do, `returns` what they return.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from replan.tools.plan_tools import plan_tools
from replan.tools.task_state import ReactTasksState, TasksState
from replan.tools.task_tools import task_tools

if TYPE_CHECKING:
    from replan.tools.task_middleware import TaskToolsMiddleware

__all__ = ["ReactTasksState", "TaskToolsMiddleware", "TasksState", "plan_tools", "task_tools"]


def __getattr__(name: str) -> Any:
    """Load `TaskToolsMiddleware` (it needs `langchain`) on first access."""
    if name != "TaskToolsMiddleware":
        raise AttributeError(f"module 'replan.tools' has no attribute {name!r}")
    return importlib.import_module("replan.tools.task_middleware").TaskToolsMiddleware
