"""The executor: carries out one plan step in a bounded tool-calling loop.

The loop is a small compiled graph (`act` → prebuilt `ToolNode` → `act` …) over its own
`messages` and `tasks_context`, so the task tools see the state they need and parallel tool
calls of one model turn are handled by `ToolNode`. It stops when the model answers without tool
calls, or after `max_steps` model calls; in the second case the step's result says plainly that
it is unfinished and shows the last tool results, and the replanner decides what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime

from graphs.context import Context
from graphs.model import ask_model, resolve_model
from graphs.prompts import Prompts
from state.plan_execute import ExecutorState, message_text

PROGRESS_RESULTS = 3
PROGRESS_CHARS = 500


class ExecutorLoop:
    """Builds the executor's inner graph and reads a step result from its final messages."""

    def __init__(
        self,
        model: BaseChatModel | None,
        tools: Sequence[BaseTool],
        prompts: Prompts,
        max_steps: int,
    ) -> None:
        if max_steps < 1:
            raise ValueError("executor_max_steps must be at least 1")
        self.model = model
        self.tools = list(tools)
        self.prompts = prompts
        self.max_steps = max_steps

    async def act(self, state: ExecutorState, runtime: Runtime[Context]) -> dict[str, Any]:
        """One model turn over the conversation of this step."""
        chat = resolve_model(self.model, runtime.context).bind_tools(self.tools)
        reply = await ask_model(chat, [SystemMessage(self.prompts.executor), *state["messages"]])
        return {"messages": [reply], "model_calls": state.get("model_calls", 0) + 1}

    def route(self, state: ExecutorState) -> Literal["tools", "__end__"]:
        """Run the requested tools, unless the model is done or the budget is spent."""
        last = state["messages"][-1]
        wants_tools = isinstance(last, AIMessage) and bool(last.tool_calls)
        return "tools" if wants_tools and state["model_calls"] < self.max_steps else "__end__"

    def compile(self) -> CompiledStateGraph[Any, Any, Any, Any]:
        """The compiled inner loop, with a recursion limit that fits `max_steps`."""
        builder = StateGraph(ExecutorState, context_schema=Context)
        builder.add_node("act", self.act)
        builder.add_node("tools", ToolNode(self.tools))
        builder.add_edge(START, "act")
        builder.add_conditional_edges("act", self.route)
        builder.add_edge("tools", "act")
        compiled = builder.compile(name="executor")
        return compiled.with_config(recursion_limit=2 * self.max_steps + 5)

    def step_result(self, messages: Sequence[AnyMessage]) -> str:
        """The model's final answer, or an UNFINISHED note when the budget ran out."""
        last = messages[-1]
        if not (isinstance(last, AIMessage) and last.tool_calls):
            return message_text(last)
        results = [m for m in messages if isinstance(m, ToolMessage)][-PROGRESS_RESULTS:]
        progress = "\n".join(
            f"- {m.name or 'tool'}: {message_text(m)[:PROGRESS_CHARS]}" for m in results
        )
        return self.prompts.step_unfinished.format(
            max_steps=self.max_steps, progress=progress or "(no tool results)"
        )
