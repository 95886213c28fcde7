"""The LLM-facing surface of replan: LangChain tools over the `state` layer."""

from tools.plan_tools import plan_tools
from tools.task_tools import task_tools

__all__ = ["plan_tools", "task_tools"]
