"""The `planner` node: asks the model for a first plan, as a forced `plan` decision."""

from __future__ import annotations

from typing import Any

from replan.graphs.calls import Steps
from replan.graphs.context import Context
from replan.graphs.conversation import (
    require_objective,
    user_texts,
    with_earlier_results,
    with_note,
)
from replan.graphs.errors import PlanExecuteError
from replan.graphs.graph_state import PLANNER, ExecutedStep, PlanExecuteState
from replan.graphs.model.client import resolve_model
from replan.graphs.model.decision_modes.asking import decide
from replan.graphs.model.decision_modes.fallbacks import DecisionModes
from replan.graphs.nodes.base import ModelNode
from replan.graphs.plan.decisions import PlanArgs, accept_plan
from replan.graphs.plan.numbering import Numbering
from replan.graphs.plan.provenance import Provenance
from replan.graphs.plan.views import REPLANNER_RESULT_CHARS, format_executed_steps
from replan.graphs.seal import declared


class Planner(ModelNode):
    """The `planner` node, with the graph's model, tool offers (the prompt lists the tools the
    run's executor gets) and prompts."""

    def instructions(self, context: Context) -> str:
        """What the planner is asked, after the conversation: with tool steps, how to write
        them (with an example in the run's own tools); else how to write text steps."""
        offer = self.offer(context)
        computing = offer.computing_note(self.prompts.planner_computing)
        if not self.tool_steps(context):
            return self.prompts.planner.format(tools=offer.listing, computing=computing)
        example = self.own_tools.example(offer.computing)
        text = self.prompts.planner_tool_steps.format(
            tools=offer.listing, computing=computing, example=example
        )
        return text + self.prompts.planner_sealed if context.plan_integrity == "sealed" else text

    def planner(self, state: PlanExecuteState, context: Context) -> Steps[dict[str, Any]]:
        """Ask the model for the turn's plan (a forced `plan` decision) and start a fresh round
        count. The model reads the conversation; on a follow-up, the last answer comes with the
        results of the turn it ended, which the plan may name. Without a usable plan within
        the retries, the turn ends not finished (`no_decision`). A run with no tools at all has
        nothing to plan: the `answer` node answers the conversation."""
        objective = require_objective(state)
        started = {"objective": objective, "iterations": 0, "stop_reason": ""}
        if not self.offer(context).tools:  # nothing to carry out: the answer is written next
            return {**started, "plan": [], "response": ""}
        carried = state.get("carried_steps", [])
        numbering = Numbering.replan((), carried, self.tool_steps(context))
        modes = DecisionModes.of_run(context, state)
        sources = Provenance.of(user_texts(state["messages"]), carried)
        messages = with_earlier_results(
            state["messages"],
            self._earlier(carried, numbering),
        )
        try:
            decision = yield from decide(
                resolve_model(self.model, context, context.decision_max_tokens),
                [self.head(context), *with_note(messages, self.instructions(context))],
                [self.decisions.plan(numbering, context, sources)],
                node=PLANNER,
                context=context,
                prompts=self.prompts,
                retries=self.bounds.for_run(context).mistake_retries,
                modes=modes,
            )
        except PlanExecuteError as error:  # the turn ends with a report, the chat goes on
            report = self.prompts.no_plan.format(problem=error.problem)
            stopped = {"plan": [], "response": report, "stop_reason": "no_decision"}
            return {**started, **stopped, **modes.update()}
        args = decision.args
        assert isinstance(args, PlanArgs)
        plan = accept_plan(args, numbering)
        if context.plan_integrity == "sealed":
            started.update(declared(plan))
        return {
            **started,
            "plan": plan,
            "response": "",
            **decision.update(),
            **modes.update(),
        }

    def _earlier(self, carried: list[ExecutedStep], numbering: Numbering) -> str:
        """What follows the last answer: the results of the turn it ended and where the new
        plan's numbers start; "" when that turn carried out no step."""
        if not carried:
            return ""
        shown = format_executed_steps(carried, limit=REPLANNER_RESULT_CHARS)
        return self.prompts.planner_earlier.format(executed_steps=shown, next=numbering.first)
