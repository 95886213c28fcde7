"""The `planner` node: asks the model for a first plan, as a forced `plan` decision."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from replan.graphs.context import ANSWER_MODES, AnswerMode, Context
from replan.graphs.conversation import require_objective
from replan.graphs.errors import PlanExecuteError
from replan.graphs.graph_state import PlanExecuteState
from replan.graphs.model.client import resolve_model
from replan.graphs.model.decision_modes import DecisionModes, DecisionTool, decide
from replan.graphs.model.offers import chosen
from replan.graphs.nodes.base import ModelNode
from replan.graphs.nodes.driver import Steps
from replan.graphs.plan.decisions import (
    PlanArgs,
    RespondArgs,
    accept_plan,
    adds_call,
    plan_tool,
    respond_tool,
    with_max_steps,
)
from replan.graphs.plan.numbering import Numbering
from replan.graphs.plan.progress import repeated_step
from replan.graphs.plan.scheduling import runnable_steps, steps_left, tool_wave, wave_fell_short
from replan.graphs.plan.task_merge import read_shared_tasks
from replan.graphs.plan.views import format_executed_steps, format_plan, replanner_briefing


class Planner(ModelNode):
    """The `planner` and `replanner` nodes, sharing the model, the tool offers (the planner lists
    the tools the run's executor gets) and the prompts."""

    @functools.cached_property
    def text_plan_tool(self) -> DecisionTool:
        """The `plan` decision without tool steps, in this graph's prompts."""
        return plan_tool(self.prompts)

    @functools.cached_property
    def tool_plan_tool(self) -> DecisionTool:
        """The `plan` decision with this graph's tools as tool steps."""
        return plan_tool(self.prompts, self.own_tools)

    @functools.cached_property
    def respond_tools(self) -> dict[AnswerMode, DecisionTool]:
        """The `respond` decision for each way of writing the answer, in this graph's prompts."""
        return {answer: respond_tool(self.prompts, answer) for answer in ANSWER_MODES}

    def replanner_system(self, context: Context) -> str:
        """The replanner's system prompt: with tool steps, the lean one (sending arithmetic to
        the run's computing tool, if any), else the full one; each asking for the answer in
        the `respond` decision or for a note only (`context.answer`)."""
        respond = (
            self.prompts.respond_with_answer
            if context.answer == "decision"
            else self.prompts.respond_then_answer
        )
        if not self.tool_steps(context):
            return self.prompts.replanner.format(respond=respond)
        computing = self.offers[chosen(context)].computing_note(self.prompts.replanner_computing)
        return self.prompts.replanner_tool_steps.format(respond=respond, computing=computing)

    def plan_decision(self, numbering: Numbering, context: Context) -> DecisionTool:
        """The `plan` decision whose steps are checked against `numbering` (and its tools),
        listing at most the run's `max_plan_steps` (the schema's `maxItems` too)."""
        base = self.tool_plan_tool if numbering.tools else self.text_plan_tool
        numbering = replace(numbering, max_steps=context.max_plan_steps)
        return replace(
            base,
            schema=with_max_steps(base.schema or {}, context.max_plan_steps),
            context=numbering,
            beside_another=functools.partial(adds_call, numbering),
        )

    def planner_system(self, context: Context) -> str:
        """The planner's system prompt: with tool steps, the lean one listing the run's own
        tools (the task tools are the text steps' agents' business); else the full one."""
        offer = self.offers[chosen(context)]
        computing = offer.computing_note(self.prompts.planner_computing)
        if not self.tool_steps(context):
            return self.prompts.planner.format(tools=offer.listing, computing=computing)
        example = self.own_tools.example(offer.computing)
        return self.prompts.planner_tool_steps.format(
            tools=self.own_tools.listing, computing=computing, example=example
        )

    def planner(self, state: PlanExecuteState, runtime: Runtime[Context]) -> Steps[dict[str, Any]]:
        """Ask the model for a plan (forced `plan` tool call) and start a fresh round count."""
        require_objective(state)
        context = runtime.context or Context()
        numbering = Numbering.first_plan(state.get("executed_steps", []), self.tool_steps(context))
        modes = DecisionModes.of_run(context, state)
        decision = yield from decide(
            resolve_model(self.model, context, context.decision_max_tokens),
            [SystemMessage(self.planner_system(context)), *state["messages"]],
            [self.plan_decision(numbering, context)],
            node="planner",
            prompts=self.prompts,
            retries=self.bounds.for_run(context).mistake_retries,
            max_tokens=context.decision_max_tokens,
            modes=modes,
        )
        args = decision.args
        assert isinstance(args, PlanArgs)
        return {
            "plan": accept_plan(args, numbering),
            "response": "",
            "stop_reason": "",
            "iterations": 0,
            **decision.update(),
            **modes.update(),
        }

    def replanner(
        self, state: PlanExecuteState, runtime: Runtime[Context]
    ) -> Steps[dict[str, Any]]:
        """`replan`, shown the shared task list as it is now when the task tools work on a
        store; that list is then kept in the state (`tasks_context`) too."""
        if self.task_store is None:
            return (yield from self.replan(state, runtime))
        tasks = yield read_shared_tasks(self.task_store)
        update = yield from self.replan({**state, "tasks_context": tasks}, runtime)
        return {**update, "tasks_context": tasks}

    def replan(self, state: PlanExecuteState, runtime: Runtime[Context]) -> Steps[dict[str, Any]]:
        """After a wave: respond, or plan the steps still to do; past `max_iterations`, or when
        the new plan's next wave repeats a step already carried out twice (no progress), end
        with a plain report. With `replan="when_needed"` the model is asked only when no planned
        step is left, a step of the wave came back unfinished or failed, or this is the last
        round; otherwise the plan goes on without the wave's steps. After a wave of tool steps
        only, when the next wave is tool steps only too, it goes on the same way whatever
        `replan` says: the plan was made for their results, and no model call comes between
        them (as LLMCompiler runs its graph of calls); before a text step the model may still
        answer at once instead."""
        context = runtime.context or Context()
        bounds = self.bounds.for_run(context)
        rounds = state.get("iterations", 0) + 1
        left = steps_left(state)
        calls_only = tool_wave(state) and all("tool" in step for step in runnable_steps(left))
        if (context.replan == "when_needed" or calls_only) and not (
            rounds >= bounds.max_iterations or not runnable_steps(left) or wave_fell_short(state)
        ):
            return {"plan": left, "iterations": rounds}
        done = state.get("executed_steps", [])
        tools = self.tool_steps(context)
        numbering = Numbering.replan(left, done, tools)
        briefing = replanner_briefing(state, self.prompts.repeated_steps)
        modes = DecisionModes.of_run(context, state)
        try:
            decision = yield from decide(
                resolve_model(self.model, context, context.decision_max_tokens),
                [
                    SystemMessage(self.replanner_system(context)),
                    HumanMessage(
                        self.prompts.replanner_task.format(next=numbering.first, **briefing)
                    ),
                ],
                [self.plan_decision(numbering, context), self.respond_tools[context.answer]],
                node="replanner",
                prompts=self.prompts,
                retries=bounds.mistake_retries,
                max_tokens=context.decision_max_tokens,
                modes=modes,
            )
        except PlanExecuteError as error:  # the work done so far is reported, not lost
            shown = {"executed_steps": format_executed_steps(done), "plan": format_plan(left)}
            report = self.prompts.no_decision.format(problem=error.problem, **shown)
            stopped = {"response": report, "stop_reason": "no_decision", "plan": left}
            return {**stopped, "iterations": rounds, **modes.update()}
        args, counted = decision.args, {**decision.update(), **modes.update()}
        if isinstance(args, RespondArgs):
            return {"response": args.response, "plan": left, "iterations": rounds, **counted}
        assert isinstance(args, PlanArgs)
        plan = accept_plan(args, numbering)
        update = {"plan": plan, "iterations": rounds, **counted}
        shown = {"executed_steps": format_executed_steps(done), "plan": format_plan(plan)}
        if repeat := repeated_step(runnable_steps(plan), done):
            step, times = repeat
            report = self.prompts.no_progress.format(step=step, times=times, **shown)
            return {**update, "response": report, "stop_reason": "no_progress"}
        if rounds < bounds.max_iterations:
            return update
        report = self.prompts.not_finished.format(max_iterations=bounds.max_iterations, **shown)
        return {**update, "response": report, "stop_reason": "max_iterations"}
