"""What every node that asks the model is built with: the model, the tools offered, the
prompts, the graph's default bounds and the shared task list's store."""

from __future__ import annotations

import functools

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import SystemMessage

from replan.graphs.context import Bounds, Context
from replan.graphs.model.offers import ToolOffer, ToolOffers
from replan.graphs.plan.decisions import Decisions
from replan.graphs.plan.own_tools import NO_TOOLS, OwnTools
from replan.graphs.prompts import Prompts
from replan.state.task_stores import TaskStore


class ModelNode:
    """The caller's model (None: each run builds a `ChatOpenAI` from its `Context`), the tools
    offered to the executor (`Context.task_tools` picks one offer), the prompts, the graph's
    default bounds, and the store of the task list when the task tools share one."""

    def __init__(
        self,
        model: BaseChatModel | None,
        offers: ToolOffers,
        prompts: Prompts,
        bounds: Bounds,
        task_store: TaskStore | None = None,
    ) -> None:
        self.model = model
        self.offers = offers
        self.prompts = prompts
        self.bounds = bounds
        self.task_store = task_store

    @functools.cached_property
    def own_tools(self) -> OwnTools:
        """The caller's own tools as tool steps may call them (the offer without task tools)."""
        return OwnTools(self.offers["none"].tools)

    @functools.cached_property
    def decisions(self) -> Decisions:
        """The `plan` and `respond` decisions, in this graph's prompts, for its own tools."""
        return Decisions(self.prompts, self.own_tools)

    def tool_steps(self, context: Context) -> OwnTools:
        """The tools a run's plans may call as tool steps: none with `tool_steps="off"`."""
        return self.own_tools if context.tool_steps == "auto" else NO_TOOLS

    def head(self, context: Context) -> SystemMessage:
        """The system message every request of the run starts with (`Prompts.head`): the same
        for every node, so a server's prompt cache reads it once per run."""
        return SystemMessage(self.prompts.head.format(tools=self.offer(context).listing))

    def offer(self, context: Context) -> ToolOffer:
        """The tools the run's executor is offered (`ToolOffers.choice`)."""
        return self.offers[self.offers.choice(context)]
