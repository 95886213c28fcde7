"""The executor node: carries out one plan step in a bounded tool-calling loop.

Each step that can start runs as its own `executor` task (a LangGraph `Send`, see `wave`), so
the steps of a wave run side by side, at most `Context.max_concurrency` at a time. A branch gets
a `StepRun`: the objective, its step, the results of the steps it depends on and the task list;
it returns its step's result, the usage of the step's model calls (attributed to the step) and,
when it changed the task list, a `TaskReplay` that the state merges with the other branches'
changes (`replan.graphs.task_merge`).

The loop is a small compiled graph (`act` → prebuilt `ToolNode` → `act` …) over its own
`messages` and `tasks_context`, so the task tools see the state they need and parallel tool
calls of one model turn are handled by `ToolNode` (a call to an unknown tool gets its error
reply there). A call whose arguments are not valid JSON never reaches `ToolNode`: `act` answers
it with an error `ToolMessage` so the model can call again. The loop stops when the model answers
without tool calls, or after `max_steps` model calls; in the second case the step's result says
plainly that it is unfinished and shows the last tool results, and the replanner decides.
"""

from __future__ import annotations

import warnings
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
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Send

from replan.graphs.chat_model import ask_model, resolve_model
from replan.graphs.context import DEFAULT_MAX_CONCURRENCY, MAX_BOUND, Bounds, Context
from replan.graphs.prompts import FAILED_PREFIX, Prompts
from replan.graphs.state import (
    ExecutedStep,
    ExecutorState,
    PlanExecuteState,
    PlannedStep,
    StepRun,
    StepStatus,
    executor_briefing,
    objective_text,
    runnable_steps,
    steps_left,
)
from replan.graphs.steps import Call, Steps, dual_node
from replan.graphs.task_merge import task_replay
from replan.state.tasks import TaskContext
from replan.state.usage import step_usage, total_tally
from replan.tools.task_state import as_task_context

EXECUTOR = "executor"

# The loop always runs with durability "exit" (see `Executor.compile`); in a run without a
# checkpointer LangGraph warns that durability then has no effect, which is expected here.
warnings.filterwarnings(
    "ignore", message="`durability` has no effect when no checkpointer", category=UserWarning
)

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
        self.tool_specs = [convert_to_openai_tool(tool) for tool in self.tools]  # built once
        self.prompts = prompts
        self.bounds = bounds
        self.loop = self.compile()

    def executor(self, run: StepRun, runtime: Runtime[Context]) -> Steps[dict[str, Any]]:
        """Carry out one step with the tools and record its result, its model usage (and
        task-list changes).

        The inner loop inherits the run's context (and its sync or async mode).
        """
        step, tasks = run["step"], as_task_context(run["tasks_context"])
        brief = self.prompts.executor_task.format(**executor_briefing(run))
        done = yield Call(self.loop, {"messages": [HumanMessage(brief)], "tasks_context": tasks})
        max_steps = self.bounds.for_run(runtime.context).executor_max_steps
        result, status = self.step_result(done["messages"], max_steps)
        executed: ExecutedStep = {
            "id": step["id"],
            "step": step["step"],
            "result": result,
            "status": status,
        }
        update: dict[str, Any] = {"executed_steps": [executed]}
        if done.get("usage"):
            used = total_tally(done["usage"])
            update["usage"] = step_usage(EXECUTOR, step["id"], used)
        replay = task_replay(tasks, done["messages"])
        if replay is not None:
            update["tasks_context"] = replay
        return update

    def act(self, state: ExecutorState, runtime: Runtime[Context]) -> Steps[dict[str, Any]]:
        """One model turn over the conversation of this step, with an error reply for each
        call whose arguments are not valid JSON."""
        chat = resolve_model(self.model, runtime.context).bind_tools(self.tool_specs)
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

    def compile(self) -> Runnable[Any, Any]:
        """The compiled inner loop, with a recursion limit that fits the largest step budget."""
        builder = StateGraph(ExecutorState, context_schema=Context)
        builder.add_node("act", dual_node(self.act))
        builder.add_node("tools", ToolNode(self.tools))
        builder.add_edge(START, "act")
        builder.add_conditional_edges("act", self.route)
        builder.add_edge("tools", "act")
        # Durability "exit", whatever the run's: the loop's messages are not saved at every turn
        # (a step cut short by a crash runs again from its start anyway), yet an `interrupt` in
        # a tool still saves what resuming the loop needs. (An inherited "sync" would also make
        # LangGraph 1.2 wait for checkpoints that a run without a checkpointer never writes.)
        compiled = builder.compile(name=EXECUTOR)
        return compiled.with_config(recursion_limit=2 * MAX_BOUND + 5).bind(durability="exit")

    def step_result(self, messages: Sequence[AnyMessage], max_steps: int) -> tuple[str, StepStatus]:
        """The model's final answer (failed when it starts with FAILED_PREFIX), or an UNFINISHED
        note when the budget ran out."""
        reply = last_reply(messages)
        if reply is not None and not (reply.tool_calls or reply.invalid_tool_calls):
            failed = reply.text.lstrip().upper().startswith(FAILED_PREFIX)
            return reply.text, "failed" if failed else "done"
        results = [m for m in messages if isinstance(m, ToolMessage)][-PROGRESS_RESULTS:]
        progress = "\n".join(f"- {m.name or 'tool'}: {m.text[:PROGRESS_CHARS]}" for m in results)
        note = self.prompts.step_unfinished.format(
            max_steps=max_steps, progress=progress or "(no tool results)"
        )
        return note, "unfinished"


def wave(state: PlanExecuteState, context: Context | None) -> list[Send]:
    """An `executor` task for each planned step whose dependencies are done, in plan order, at
    most `context.max_concurrency` of them (the others wait for the next wave)."""
    limit = context.max_concurrency if context is not None else DEFAULT_MAX_CONCURRENCY
    results = {done["id"]: done for done in state.get("executed_steps", []) if "id" in done}
    objective = objective_text(state["messages"])
    tasks = state.get("tasks_context") or TaskContext()

    def branch(step: PlannedStep) -> Send:
        inputs = [results[d] for d in step["depends_on"] if d in results]
        run: StepRun = {
            "objective": objective,
            "step": step,
            "dependencies": inputs,
            "tasks_context": tasks,
        }
        return Send(EXECUTOR, run)

    return [branch(step) for step in runnable_steps(steps_left(state))[:limit]]
