"""The `executor` node: carries out one plan step, a text step in its tool loop
(`replan.graphs.nodes.tool_loop`) or a tool step with one direct call
(`replan.graphs.nodes.tool_step`).

Each step that can start runs as its own `executor` task (a LangGraph `Send`,
`replan.graphs.plan.scheduling.wave`), so the steps of a wave run side by side, at most
`Context.max_concurrency` at a time. A branch gets a `StepRun`: the objective, its step, the
results of the steps it depends on and the task list; it returns its step's result, the usage
of the step's model calls (attributed to the step), how many tool calls written as text it
recovered and how many mistaken replies it corrected and, when it changed the task list, a
`TaskReplay` that the state merges with the other branches' changes
(`replan.graphs.plan.task_merge`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from replan.graphs.calls import Call, Steps
from replan.graphs.context import Context
from replan.graphs.graph_state import EXECUTOR, ExecutedStep, StepRun
from replan.graphs.model.text_calls import recovered_calls
from replan.graphs.nodes.tool_loop import ToolLoop, corrected_mistakes
from replan.graphs.nodes.tool_step import run_tool_step
from replan.graphs.plan.task_merge import read_shared_tasks, task_replay
from replan.graphs.plan.views import executor_briefing
from replan.graphs.seal import with_tools
from replan.state.usage import step_usage, total_tally
from replan.tools.task_state import as_task_context


class Executor(ToolLoop):
    """The `executor` node, running text steps in its tool loops."""

    def executor(self, run: StepRun, context: Context) -> Steps[dict[str, Any]]:
        """Carry out one step and record its result, its model usage (and task-list changes).
        The tool loop runs with the run's settings (and in its sync or async mode)."""
        if "tool" in run["step"]:
            tools, errors = self.tool_steps(context), context.tool_errors
            return (yield from run_tool_step(run, tools, self.prompts, errors))
        step, tasks = run["step"], as_task_context(run["tasks_context"])
        if self.task_store is not None:  # the shared list as it is now, not as the wave began
            tasks = yield read_shared_tasks(self.task_store)
            run = {**run, "tasks_context": tasks}
        max_steps = self.bounds.for_run(context).executor_max_steps
        choice = self.offers.choice(context)
        brief = self.prompts.executor_task.format(
            **executor_briefing(run, self.offers[choice].has_task_tools)
        )
        asked = self.instructions[choice]
        start = {
            "messages": [HumanMessage(f"{asked}\n\n{brief}")],
            "tasks_context": tasks,
            "step": step["step"],
            "max_steps": max_steps,
            "builds_on": bool(run["dependencies"]),
            "forced_as": run.get("decision_mode", "tool_required"),
            "known": run.get("known", ""),
        }
        if "seal" in run:  # the task tools over the run's own state never act outside it
            own_state = [] if self.task_store else self.offers[choice].task_tool_names
            start["seal"] = with_tools(run["seal"], own_state)
        done = yield Call(self.for_run(context), start)
        messages = done["messages"]
        result, status = self.step_result(messages, max_steps, context.executor_max_tokens)
        executed: ExecutedStep = {
            "id": step["id"],
            "step": step["step"],
            "result": result,
            "status": status,
        }
        if self.acted(context, messages):
            executed["acted"] = True
        update: dict[str, Any] = {"executed_steps": [executed]}
        if recovered := sum(recovered_calls(m) for m in messages if isinstance(m, AIMessage)):
            update["recovered_calls"] = recovered
        if mistakes := corrected_mistakes(done):
            update["corrected_mistakes"] = mistakes
        if done.get("usage"):
            update["usage"] = step_usage(EXECUTOR, step["id"], total_tally(done["usage"]))
        replay = None if self.task_store else task_replay(tasks, messages)
        if replay is not None:
            update["tasks_context"] = replay
        return update

    def acted(self, context: Context, messages: Sequence[AnyMessage]) -> bool:
        """Whether the step called one of the run's own tools that may act (the task tools
        change only the task list, which no tool step reads)."""
        effects = self.offer(context).effects
        return any(
            effects[call["name"]].acts
            for message in messages
            if isinstance(message, AIMessage)
            for call in message.tool_calls
            if call["name"] in effects
        )
