"""The `planner` node: asks the model for a first plan, as a forced `plan` decision."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import SystemMessage

from replan.graphs.calls import Steps
from replan.graphs.context import Context
from replan.graphs.conversation import require_objective
from replan.graphs.graph_state import PLANNER, PlanExecuteState
from replan.graphs.model.client import resolve_model
from replan.graphs.model.decision_modes.asking import decide
from replan.graphs.model.decision_modes.fallbacks import DecisionModes
from replan.graphs.nodes.base import ModelNode
from replan.graphs.plan.decisions import PlanArgs, accept_plan
from replan.graphs.plan.numbering import Numbering


class Planner(ModelNode):
    """The `planner` node, with the graph's model, tool offers (the prompt lists the tools the
    run's executor gets) and prompts."""

    def system(self, context: Context) -> str:
        """The planner's system prompt: with tool steps, the lean one listing the run's own
        tools (the task tools are the text steps' agents' business); else the full one."""
        offer = self.offer(context)
        computing = offer.computing_note(self.prompts.planner_computing)
        if not self.tool_steps(context):
            return self.prompts.planner.format(tools=offer.listing, computing=computing)
        example = self.own_tools.example(offer.computing)
        return self.prompts.planner_tool_steps.format(
            tools=self.own_tools.listing, computing=computing, example=example
        )

    def planner(self, state: PlanExecuteState, context: Context) -> Steps[dict[str, Any]]:
        """Ask the model for a plan (forced `plan` tool call) and start a fresh round count."""
        require_objective(state)
        numbering = Numbering.first_plan(state.get("executed_steps", []), self.tool_steps(context))
        modes = DecisionModes.of_run(context, state)
        decision = yield from decide(
            resolve_model(self.model, context, context.decision_max_tokens),
            [SystemMessage(self.system(context)), *state["messages"]],
            [self.decisions.plan(numbering, context)],
            node=PLANNER,
            context=context,
            prompts=self.prompts,
            retries=self.bounds.for_run(context).mistake_retries,
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
