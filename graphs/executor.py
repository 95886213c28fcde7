"""The executor node: carries out one plan step in a bounded tool-calling loop.

The loop is a small compiled graph (`act` → prebuilt `ToolNode` → `act` …) over its own
`messages` and `tasks_context`, so the task tools see the state they need and parallel tool
calls of one model turn are handled by `ToolNode` (a call to an unknown tool gets its error
reply there). A call whose arguments are not valid JSON never reaches `ToolNode`: `act` answers
it with an error `ToolMessage` so the model can call again. The loop stops when the model answers
without tool calls, or after `max_steps` model calls; in the second case the step's result says
plainly that it is unfinished and shows the last tool results, and the replanner decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime

from replan.graphs.chat_model import ask_model, resolve_model
from replan.graphs.context import MAX_BOUND, Bounds, Context
from replan.graphs.prompts import Prompts
from replan.graphs.state import ExecutorState, PlanExecuteState, briefing
from replan.graphs.steps import Call, Steps, dual_node
from replan.state.tasks import TaskContext

PROGRESS_RESULTS = 3
PROGRESS_CHARS = 500
INVALID_ARGUMENTS = (
    "Error: the arguments of this `{name}` call were not valid JSON, so it did not run. "
    "Call `{name}` again with the arguments as a JSON object."
)


def invalid_call_replies(reply: AIMessage) -> list[ToolMessage]:
    """An error reply for each tool call of `reply` whose arguments did not parse."""
    return [
        ToolMessage(
            INVALID_ARGUMENTS.format(name=call.get("name") or "tool"),
            tool_call_id=call.get("id") or "",
            name=call.get("name") or "tool",
            status="error",
        )
        for call in reply.invalid_tool_calls
    ]


def last_reply(messages: Sequence[AnyMessage]) -> AIMessage | None:
    """The model's latest turn in `messages`."""
    return next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)


class Executor:
    """The `executor` node and the inner tool loop it runs for each step."""

    def __init__(
        self,
        model: BaseChatModel | None,
        tools: Sequence[BaseTool],
        prompts: Prompts,
        bounds: Bounds,
    ) -> None:
        self.model = model
        self.tools = list(tools)
        self.prompts = prompts
        self.bounds = bounds
        self.loop = self.compile()

    def executor(self, state: PlanExecuteState, runtime: Runtime[Context]) -> Steps[dict[str, Any]]:
        """Carry out `plan[0]` with the tools; record its result and drop it from the plan.

        The inner loop inherits the run's context (and its sync or async mode).
        """
        plan = state["plan"]
        brief = self.prompts.executor_task.format(**briefing(state), step=plan[0])
        tasks = state.get("tasks_context") or TaskContext()
        done = yield Call(self.loop, {"messages": [HumanMessage(brief)], "tasks_context": tasks})
        max_steps = self.bounds.for_run(runtime.context).executor_max_steps
        return {
            "plan": plan[1:],
            "executed_steps": [
                {"step": plan[0], "result": self.step_result(done["messages"], max_steps)}
            ],
            "tasks_context": done["tasks_context"],
            "iterations": state.get("iterations", 0) + 1,
        }

    def act(self, state: ExecutorState, runtime: Runtime[Context]) -> Steps[dict[str, Any]]:
        """One model turn over the conversation of this step, with an error reply for each
        call whose arguments are not valid JSON."""
        chat = resolve_model(self.model, runtime.context).bind_tools(self.tools)
        conversation = [SystemMessage(self.prompts.executor), *state["messages"]]
        reply = yield from ask_model(chat, conversation)
        return {
            "messages": [reply, *invalid_call_replies(reply)],
            "model_calls": state.get("model_calls", 0) + 1,
        }

    def route(
        self, state: ExecutorState, runtime: Runtime[Context]
    ) -> Literal["tools", "act", "__end__"]:
        """Run the requested tools (or ask again after malformed calls), unless the model is
        done or the budget is spent."""
        reply = last_reply(state["messages"])
        max_steps = self.bounds.for_run(runtime.context).executor_max_steps
        if reply is None or state["model_calls"] >= max_steps:
            return "__end__"
        if reply.tool_calls:
            return "tools"
        return "act" if reply.invalid_tool_calls else "__end__"

    def compile(self) -> CompiledStateGraph[Any, Any, Any, Any]:
        """The compiled inner loop, with a recursion limit that fits the largest step budget."""
        builder = StateGraph(ExecutorState, context_schema=Context)
        builder.add_node("act", dual_node(self.act))
        builder.add_node("tools", ToolNode(self.tools))
        builder.add_edge(START, "act")
        builder.add_conditional_edges("act", self.route)
        builder.add_edge("tools", "act")
        compiled = builder.compile(name="executor")
        return compiled.with_config(recursion_limit=2 * MAX_BOUND + 5)

    def step_result(self, messages: Sequence[AnyMessage], max_steps: int) -> str:
        """The model's final answer, or an UNFINISHED note when the budget ran out."""
        reply = last_reply(messages)
        if reply is not None and not (reply.tool_calls or reply.invalid_tool_calls):
            return reply.text
        results = [m for m in messages if isinstance(m, ToolMessage)][-PROGRESS_RESULTS:]
        progress = "\n".join(f"- {m.name or 'tool'}: {m.text[:PROGRESS_CHARS]}" for m in results)
        return self.prompts.step_unfinished.format(
            max_steps=max_steps, progress=progress or "(no tool results)"
        )
