"""The nodes of the plan–execute graph: planner, review_plan, executor and replanner.

The planner, executor and replanner are `Steps` generators (see `graphs.model`): wrap them with
`dual_node` so they run in both sync and async invocations.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from graphs.context import Context
from graphs.model import Call, Steps, resolve_model
from graphs.nodes_decision import decide, plan_tool, respond_tool
from graphs.nodes_executor import ExecutorLoop
from state import TaskContext, format_task_list
from state.plan_execute import (
    PlanArgs,
    PlanExecuteState,
    RespondArgs,
    format_executed_steps,
    format_plan,
    objective_text,
    parse_plan_review,
)


class PlanExecuteNodes:
    """Node functions sharing the executor loop's model, tools and prompts, and the bounds."""

    def __init__(self, loop: ExecutorLoop, *, max_iterations: int, mistake_retries: int) -> None:
        if max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        self.loop = loop
        self.model, self.tools, self.prompts = loop.model, loop.tools, loop.prompts
        self.max_iterations = max_iterations
        self.mistake_retries = mistake_retries
        self.executor_graph = loop.compile()

    def _briefing(self, state: PlanExecuteState) -> dict[str, str]:
        """The progress so far, as the prompt placeholders name it."""
        return {
            "objective": objective_text(state["messages"]),
            "plan": format_plan(state.get("plan", [])),
            "executed_steps": format_executed_steps(state.get("executed_steps", [])),
            "tasks": format_task_list(state.get("tasks_context") or TaskContext()),
        }

    def planner(self, state: PlanExecuteState, runtime: Runtime[Context]) -> Steps[dict[str, Any]]:
        """Ask the model for a plan (forced `plan` tool call) and start a fresh round count."""
        tool_list = "\n".join(f"- {tool.name}: {tool.description}" for tool in self.tools)
        system = SystemMessage(self.prompts.planner.format(tools=tool_list or "(none)"))
        args = yield from decide(
            resolve_model(self.model, runtime.context),
            [system, *state["messages"]],
            [plan_tool(self.prompts)],
            node="planner",
            prompts=self.prompts,
            retries=self.mistake_retries,
        )
        assert isinstance(args, PlanArgs)
        return {"plan": args.steps, "response": "", "iterations": 0}

    def review_plan(self, state: PlanExecuteState) -> Command[Literal["executor", "__end__"]]:
        """Pause for a human to approve, edit or reject the plan (see `parse_plan_review`).

        An answer that is none of those pauses again, with an `error` saying what is accepted,
        so a typo never strands the run.
        """
        plan = state["plan"]
        question = self.prompts.review_question.format(plan=format_plan(plan))
        shown: dict[str, Any] = {"plan": plan, "question": question}
        while True:
            try:
                review = parse_plan_review(interrupt(shown))
                break
            except ValueError as exc:
                shown = {**shown, "error": str(exc)}
        if review.action == "reject":
            reason = f" Reason: {review.reason}" if review.reason else ""
            return Command(
                goto="__end__", update={"response": self.prompts.rejected.format(reason=reason)}
            )
        if review.action == "edit":
            return Command(goto="executor", update={"plan": list(review.steps)})
        return Command(goto="executor")

    def executor(self, state: PlanExecuteState, runtime: Runtime[Context]) -> Steps[dict[str, Any]]:
        """Carry out `plan[0]` with the tools; record its result and drop it from the plan.

        The inner loop inherits the run's context (and its sync or async mode).
        """
        plan = state["plan"]
        brief = self.prompts.executor_task.format(**self._briefing(state), step=plan[0])
        tasks = state.get("tasks_context") or TaskContext()
        done = yield Call(
            self.executor_graph, {"messages": [HumanMessage(brief)], "tasks_context": tasks}
        )
        return {
            "plan": plan[1:],
            "executed_steps": [
                {"step": plan[0], "result": self.loop.step_result(done["messages"])}
            ],
            "tasks_context": done["tasks_context"],
            "iterations": state.get("iterations", 0) + 1,
        }

    def replanner(
        self, state: PlanExecuteState, runtime: Runtime[Context]
    ) -> Steps[dict[str, Any]]:
        """Respond, or plan the remaining steps; past `max_iterations`, end with a plain report."""
        briefing = self._briefing(state)
        args = yield from decide(
            resolve_model(self.model, runtime.context),
            [
                SystemMessage(self.prompts.replanner),
                HumanMessage(self.prompts.replanner_task.format(**briefing)),
            ],
            [plan_tool(self.prompts), respond_tool(self.prompts)],
            node="replanner",
            prompts=self.prompts,
            retries=self.mistake_retries,
        )
        if isinstance(args, RespondArgs):
            return {"response": args.response}
        assert isinstance(args, PlanArgs)
        if state.get("iterations", 0) < self.max_iterations:
            return {"plan": args.steps}
        report = self.prompts.not_finished.format(
            max_iterations=self.max_iterations,
            executed_steps=briefing["executed_steps"],
            plan=format_plan(args.steps),
        )
        return {"plan": args.steps, "response": report}


def after_planner(
    state: PlanExecuteState, runtime: Runtime[Context]
) -> Literal["review_plan", "executor"]:
    """Go to the human review when the run's context asks for it."""
    approve = runtime.context is not None and runtime.context.approve_plan
    return "review_plan" if approve else "executor"


def after_replanner(state: PlanExecuteState) -> Literal["executor", "__end__"]:
    """End once there is a response; otherwise execute the next step."""
    return "__end__" if state.get("response") else "executor"
