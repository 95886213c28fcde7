"""The planner and replanner nodes, and the forced decisions they ask the model for.

The planner and the replanner do not run tools; they read the model's choice of `plan` (with
`steps`) or `respond` (with `response`), asked for as the run's `Context.decision_mode` says
(`replan.graphs.decision_modes`: forced tool calls or a JSON reply, with a fallback when the
server refuses the way asked). A reply without a tool call, with a tool that was not
offered, with several calls, or with arguments that do not parse is a mistake: the model is told
what went wrong and asked again, up to a bound, then `PlanExecuteError` stops the run. A step
that depends on itself, on a later step or on a position the list does not have is such a
mistake too. Tool calls a model wrote as text are read back before the reply is judged
(`ask_model` with the offered tools; `replan.graphs.text_calls`).

An accepted plan gets stable step ids (`accept_plan`): the positions a model writes become id
dependencies, and a replanned step with the same text as a step still planned keeps its id.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field, field_validator, model_validator

from replan.graphs.briefings import format_executed_steps, format_plan, replanner_briefing
from replan.graphs.chat_model import resolve_model
from replan.graphs.context import Context
from replan.graphs.decision_modes import DecisionModes, DecisionTool, decide
from replan.graphs.model_node import ModelNode
from replan.graphs.node_driver import Steps
from replan.graphs.plan_rules import repeated_step, require_objective, runnable_steps, steps_left
from replan.graphs.prompts import Prompts
from replan.graphs.schema import ExecutedStep, PlanExecuteState, PlannedStep
from replan.graphs.task_merge import read_shared_tasks
from replan.graphs.tool_offers import chosen


class PlanStepArgs(BaseModel):
    """A step with its dependencies: 1-based positions of earlier steps of the same list.
    Without `depends_on` it runs after the step before it, like a plain string."""

    step: str
    depends_on: list[int] | None = None


class PlanArgs(BaseModel):
    """Arguments of the `plan` decision: a non-empty list of steps, each a non-blank string or
    a `PlanStepArgs` whose dependencies name only earlier steps (so there is no cycle).

    A string holding such an object as JSON is read as the object, which lets a command line
    pass dependencies (`--edit-plan '{"step": "...", "depends_on": [1]}'`).
    """

    steps: list[str | PlanStepArgs] = Field(min_length=1)

    @field_validator("steps", mode="before")
    @classmethod
    def _objects_written_as_json(cls, steps: Any) -> Any:
        if not isinstance(steps, list):
            return steps
        return [_json_object(step) if isinstance(step, str) else step for step in steps]

    @model_validator(mode="after")
    def _valid_steps(self) -> PlanArgs:
        problems: list[str] = []
        for position, (text, depends_on) in enumerate(self.positions(), 1):
            if not text:
                problems.append(f"step {position} is blank")
            for other in depends_on:
                if other == position:
                    problems.append(f"step {position} depends on itself")
                elif not 1 <= other <= len(self.steps):
                    problems.append(
                        f"step {position} depends on step {other}, but the list has steps 1 "
                        f"to {len(self.steps)}"
                    )
                elif other > position:
                    problems.append(
                        f"step {position} depends on step {other}, which comes after it (a "
                        "step may only depend on steps listed before it)"
                    )
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def positions(self) -> list[tuple[str, list[int]]]:
        """Each step's text and the 1-based positions of the steps it waits for."""
        return [
            (step.strip(), [position - 1] if position > 1 else [])
            if isinstance(step, str)
            else (step.step.strip(), _waits_for(position, step.depends_on))
            for position, step in enumerate(self.steps, 1)
        ]


def _waits_for(position: int, depends_on: list[int] | None) -> list[int]:
    if depends_on is None:
        return [position - 1] if position > 1 else []
    return sorted(set(depends_on))


def _json_object(text: str) -> Any:
    """`text` parsed when it is a JSON object with a `step`; else `text` itself."""
    if not text.lstrip().startswith("{"):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) and "step" in value else text


def accept_plan(
    args: PlanArgs, *, keep: Sequence[PlannedStep] = (), done: Sequence[ExecutedStep] = ()
) -> list[PlannedStep]:
    """The plan `args` describes, with stable step ids (positions become id dependencies).

    A step whose text matches a step of `keep` (the plan it replaces) keeps that step's id and
    its dependencies on `done` steps, so it still sees their results; every other step gets a
    new id, unique among `keep` and `done`.
    """
    done_ids = {step["id"] for step in done if "id" in step}
    unmatched = list(keep)
    next_id = max([*done_ids, *(step["id"] for step in keep)], default=0) + 1
    ids: list[int] = []
    carried: list[list[int]] = []
    positions = args.positions()
    for text, _ in positions:
        match = next((step for step in unmatched if step["step"] == text), None)
        if match is None:
            ids.append(next_id)
            carried.append([])
            next_id += 1
        else:
            unmatched.remove(match)
            ids.append(match["id"])
            carried.append([d for d in match["depends_on"] if d in done_ids])
    return [
        {"id": ids[i], "step": text, "depends_on": [*carried[i], *(ids[p - 1] for p in after)]}
        for i, (text, after) in enumerate(positions)
    ]


class RespondArgs(BaseModel):
    """Arguments of the `respond` decision: the final answer."""

    response: str = Field(min_length=1)


def plan_tool(prompts: Prompts) -> DecisionTool:
    """The `plan` tool: `steps`, each a string or a step with its dependencies."""
    return DecisionTool("plan", prompts.plan_tool, PlanArgs, {"steps": prompts.plan_steps})


def respond_tool(prompts: Prompts) -> DecisionTool:
    """The `respond` tool: `response`, the final answer."""
    return DecisionTool(
        "respond", prompts.respond_tool, RespondArgs, {"response": prompts.respond_response}
    )


class Planner(ModelNode):
    """The `planner` and `replanner` nodes, sharing the model, the tool offers (the planner lists
    the tools the run's executor gets) and the prompts."""

    @functools.cached_property
    def plan_tool(self) -> DecisionTool:
        """The `plan` decision, in this graph's prompts."""
        return plan_tool(self.prompts)

    @functools.cached_property
    def respond_tool(self) -> DecisionTool:
        """The `respond` decision, in this graph's prompts."""
        return respond_tool(self.prompts)

    def planner(self, state: PlanExecuteState, runtime: Runtime[Context]) -> Steps[dict[str, Any]]:
        """Ask the model for a plan (forced `plan` tool call) and start a fresh round count."""
        require_objective(state)
        tool_list = self.offers[chosen(runtime.context)].listing  # the executor's tools
        system = SystemMessage(self.prompts.planner.format(tools=tool_list))
        context = runtime.context or Context()
        modes = DecisionModes.of_run(context, state)
        decision = yield from decide(
            resolve_model(self.model, context, context.decision_max_tokens),
            [system, *state["messages"]],
            [self.plan_tool],
            node="planner",
            prompts=self.prompts,
            retries=self.bounds.for_run(context).mistake_retries,
            max_tokens=context.decision_max_tokens,
            modes=modes,
        )
        args = decision.args
        assert isinstance(args, PlanArgs)
        plan = accept_plan(args, done=state.get("executed_steps", []))
        return {
            "plan": plan,
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
        round; otherwise the plan goes on without the wave's steps."""
        context = runtime.context or Context()
        bounds = self.bounds.for_run(context)
        rounds = state.get("iterations", 0) + 1
        left = steps_left(state)
        if context.replan == "when_needed" and not (
            rounds >= bounds.max_iterations or not runnable_steps(left) or wave_fell_short(state)
        ):
            return {"plan": left, "iterations": rounds}
        briefing = replanner_briefing(state, self.prompts.repeated_steps)
        modes = DecisionModes.of_run(context, state)
        decision = yield from decide(
            resolve_model(self.model, context, context.decision_max_tokens),
            [
                SystemMessage(self.prompts.replanner),
                HumanMessage(self.prompts.replanner_task.format(**briefing)),
            ],
            [self.plan_tool, self.respond_tool],
            node="replanner",
            prompts=self.prompts,
            retries=bounds.mistake_retries,
            max_tokens=context.decision_max_tokens,
            modes=modes,
        )
        args, counted = decision.args, {**decision.update(), **modes.update()}
        if isinstance(args, RespondArgs):
            return {"response": args.response, "plan": left, "iterations": rounds, **counted}
        assert isinstance(args, PlanArgs)
        done = state.get("executed_steps", [])
        plan = accept_plan(args, keep=left, done=done)
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


def wave_fell_short(state: PlanExecuteState) -> bool:
    """Whether a step of the last wave (the executed steps still in `plan`) came back
    unfinished or failed."""
    planned = {step["id"] for step in state.get("plan", [])}
    return any(
        done.get("id") in planned and done.get("status", "done") != "done"
        for done in state.get("executed_steps", [])
    )
