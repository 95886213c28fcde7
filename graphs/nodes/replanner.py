"""The `replanner` node: after each wave, responds, plans the steps still to do, or ends a run
that cannot finish (its round limit, no progress, no usable decision) with a report."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from replan.graphs.calls import Steps
from replan.graphs.context import Context
from replan.graphs.conversation import user_texts
from replan.graphs.errors import PlanExecuteError
from replan.graphs.graph_state import REPLANNER, PlanExecuteState
from replan.graphs.model.client import resolve_model
from replan.graphs.model.decision_modes.asking import Decision, decide
from replan.graphs.model.decision_modes.fallbacks import DecisionModes
from replan.graphs.model.decision_modes.strategy import DecisionTool
from replan.graphs.nodes.base import ModelNode
from replan.graphs.plan.decisions import PlanArgs, RespondArgs, accept_plan, adds_call
from replan.graphs.plan.numbering import Numbering
from replan.graphs.plan.progress import repeated_step, without_calls_made
from replan.graphs.plan.provenance import Provenance
from replan.graphs.plan.scheduling import (
    due_steps,
    runnable_steps,
    steps_left,
    tool_wave,
    wave_fell_short,
)
from replan.graphs.plan.task_merge import read_shared_tasks
from replan.graphs.plan.views import (
    calls_short,
    format_executed_steps,
    format_plan,
    replanner_briefing,
)

UNMADE_RETRIES = 1
"""Corrections of the plan-only decision that follows a response leaving calls unmade."""


class Replanner(ModelNode):
    """The `replanner` node, with the graph's model, tool offers and prompts."""

    def instructions(self, context: Context) -> str:
        """What the replanner is asked, before its briefing: with tool steps, the lean text
        (sending arithmetic to the run's computing tool, if any), else the full one; each asking
        for the answer in the `respond` decision or for a note only (`context.answer`)."""
        respond = (
            self.prompts.respond_with_answer
            if context.answer == "decision"
            else self.prompts.respond_then_answer
        )
        if not self.tool_steps(context):
            return self.prompts.replanner.format(respond=respond)
        computing = self.offer(context).computing_note(self.prompts.replanner_computing)
        return self.prompts.replanner_tool_steps.format(respond=respond, computing=computing)

    def replanner(self, state: PlanExecuteState, context: Context) -> Steps[dict[str, Any]]:
        """`replan`, shown the shared task list as it is now when the task tools work on a
        store; that list is then kept in the state (`tasks_context`) too."""
        if self.task_store is None:
            return (yield from self.replan(state, context))
        tasks = yield read_shared_tasks(self.task_store)
        update = yield from self.replan({**state, "tasks_context": tasks}, context)
        return {**update, "tasks_context": tasks}

    def replan(self, state: PlanExecuteState, context: Context) -> Steps[dict[str, Any]]:
        """After a wave: respond, or plan the steps still to do; past `max_iterations`, or when
        the new plan's next wave repeats a step already carried out twice (no progress), end
        with a plain report. With `replan="when_needed"` the model is asked only when no planned
        step is left, a step of the wave came back unfinished or failed, or this is the last
        round; otherwise the plan goes on without the wave's steps. After a wave of tool steps
        only, when the next wave is tool steps only too, it goes on the same way whatever
        `replan` says: the plan was made for their results, and no model call comes between
        them (as LLMCompiler runs its graph of calls); before a text step the model may still
        answer at once instead. A deferred step whose dependencies are done always asks the
        model, which writes its arguments."""
        bounds = self.bounds.for_run(context)
        rounds = state.get("iterations", 0) + 1
        left = steps_left(state)
        calls_only = tool_wave(state) and all("tool" in step for step in runnable_steps(left))
        if (context.replan == "when_needed" or calls_only) and not (
            rounds >= bounds.max_iterations
            or not runnable_steps(left)
            or wave_fell_short(state)
            or due_steps(left)
        ):
            return {"plan": left, "iterations": rounds}
        done = state.get("executed_steps", [])
        carried = state.get("carried_steps", [])
        numbering = Numbering.replan(left, [*carried, *done], self.tool_steps(context))
        prompts = self.prompts
        briefing = replanner_briefing(state, prompts.repeated_steps, prompts.replanner_earlier)
        modes = DecisionModes.of_run(context, state)
        task = self.prompts.replanner_task.format(next=numbering.first, **briefing)
        sources = Provenance.of(user_texts(state["messages"]), [*carried, *done])
        messages = [self.head(context), HumanMessage(f"{self.instructions(context)}\n\n{task}")]
        planning = self.decisions.plan(numbering, context, sources)
        ask = functools.partial(
            decide,
            resolve_model(self.model, context, context.decision_max_tokens),
            node=REPLANNER,
            context=context,
            prompts=self.prompts,
            modes=modes,
        )
        try:
            decision = yield from ask(
                messages,
                [self.decisions.respond(context), planning],
                retries=bounds.mistake_retries,
            )
        except PlanExecuteError as error:  # the work done so far is reported, not lost
            shown = {"executed_steps": format_executed_steps(done), "plan": format_plan(left)}
            report = self.prompts.no_decision.format(problem=error.problem, **shown)
            stopped = {"response": report, "stop_reason": "no_decision", "plan": left}
            return {**stopped, "iterations": rounds, **modes.update()}
        if isinstance(decision.args, RespondArgs) and (short := calls_short(state)):
            decision = yield from self._plan_unmade(
                ask, messages, decision, short, planning, numbering
            )
        args, counted = decision.args, {**decision.update(), **modes.update()}
        if isinstance(args, RespondArgs):
            return {"response": args.response, "plan": left, "iterations": rounds, **counted}
        assert isinstance(args, PlanArgs)
        plan = without_calls_made(accept_plan(args, numbering), done, numbering.ids_from)
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

    def _plan_unmade(
        self,
        ask: Callable[..., Steps[Decision]],
        messages: list[BaseMessage],
        response: Decision,
        short: list[str],
        plan: DecisionTool,
        numbering: Numbering,
    ) -> Steps[Decision]:
        """After a response while calls of the plan failed or are still to make (`short`, from
        `calls_short`): one plan-only decision, told which they are (a small model answers
        after a failed call as if every call had been made). The response stands when no
        usable plan comes, or one that makes no call not made before (re-listing calls that
        were made, or failed, only repeats them)."""
        told = HumanMessage(self.prompts.unmade_calls.format(steps="\n".join(short)))
        answered = AIMessage(cast(RespondArgs, response.args).response)
        try:
            replanned = yield from ask([*messages, answered, told], [plan], retries=UNMADE_RETRIES)
        except PlanExecuteError:
            return response
        if not adds_call(numbering, replanned.args):
            return response
        recovered = replanned.recovered_calls + response.recovered_calls
        mistakes = replanned.mistakes + response.mistakes + 1
        return replace(replanned, recovered_calls=recovered, mistakes=mistakes)
