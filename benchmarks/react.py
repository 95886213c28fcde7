"""A plain ReAct agent: what a user builds instead of a planning agent, as a baseline.

`langchain.agents.create_agent` with the run's tools and no planning: the model calls tools (as
many in one reply as it wants) until it answers in text. No system prompt, as a user who only
hands over the tools would build it; a checkpointer keeps the conversation, so each user turn
is appended to one thread. Its bound is the most model calls for one turn (`max_steps`, as the
recursion limit of an invocation), like the executor bound of the other designs. Middleware given
(`TextCallRecoveryMiddleware`, to read calls a model wrote as text) wraps its model calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool


def react_agent(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    checkpointer: Any = None,
    middleware: Sequence[AgentMiddleware[Any, Any, Any]] = (),
) -> Any:
    """The ReAct agent: `create_agent(model, tools)` with a checkpointer for conversations and
    the `middleware` given."""
    return create_agent(model, list(tools), middleware=middleware, checkpointer=checkpointer)


def react_config(thread_id: str, max_steps: int) -> RunnableConfig:
    """A turn's config: its thread, and a recursion limit that allows `max_steps` model calls
    (each model call is a graph step, and so are the tool calls it asks for, and the agent
    takes one more to end); past it the invocation raises `GraphRecursionError`."""
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": 2 * max_steps}
