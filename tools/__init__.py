"""The LLM-facing surface of replan: LangChain tools over the `replan.state` layer."""

from replan.tools.plan_tools import plan_tools
from replan.tools.task_state import TasksState
from replan.tools.task_tools import task_tools

__all__ = ["TasksState", "plan_tools", "task_tools"]
