"""The planner and replanner nodes, and the forced decisions they ask the model for.

The planner and the replanner do not run tools; they read the model's choice of `plan` (with
`steps`) or `respond` (with `response`), asked for as the run's `Context.decision_mode` says
(`replan.graphs.decision_modes`: forced tool calls or a JSON reply, with a fallback when the
server refuses the way asked). A reply without a tool call, with a tool that was not
offered, with several calls, or with arguments that do not parse is a mistake: the model is told
what went wrong and asked again, up to a bound; then the planner stops the run with
`PlanExecuteError`, and the replanner ends it not finished (`stop_reason` "no_decision"),
reporting the work done. A step
that names itself, a later step or a number no step has, and a tool step with an unknown tool
or arguments that do not fit its schema, are such mistakes too (`replan.graphs.step_numbers`).
Tool calls a model wrote as text are read back before the reply is judged (`ask_model` with the
offered tools; `replan.graphs.text_calls`).

When the run offers tool steps (`Context.tool_steps`, `replan.graphs.tool_steps`), the `plan`
schema offers one object per tool of the run, and the prompts are the lean ones.

An accepted plan keeps the numbers the model was shown as step ids (`accept_plan`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from replan.graphs.briefings import format_executed_steps, format_plan, replanner_briefing
from replan.graphs.chat_model import resolve_model
from replan.graphs.context import ANSWER_MODES, AnswerMode, Context
from replan.graphs.decision_modes import DecisionModes, DecisionTool, decide
from replan.graphs.errors import PlanExecuteError
from replan.graphs.model_node import ModelNode
from replan.graphs.node_driver import Steps
from replan.graphs.plan_rules import repeated_step, require_objective, runnable_steps, steps_left
from replan.graphs.prompts import Prompts
from replan.graphs.schema import ExecutedStep, PlanExecuteState, PlannedStep
from replan.graphs.step_numbers import Item, Numbering
from replan.graphs.task_merge import read_shared_tasks
from replan.graphs.tool_offers import chosen
from replan.graphs.tool_steps import NO_TOOLS, OwnTools, money_as_numbers


class PlanStepArgs(BaseModel):
    """A step with its dependencies: 1-based positions of earlier steps of the same list.
    Without `depends_on` it runs after the step before it, like a plain string."""

    step: str
    depends_on: list[int] | None = None


class ToolStepArgs(BaseModel):
    """A tool step: `tool` called with `args` (`"$N"` in them names step N's result), after
    the steps `depends_on` names and those it refers to (`replan.graphs.tool_steps`)."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    depends_on: list[int] | None = None


class PlanArgs(BaseModel):
    """Arguments of the `plan` decision: a non-empty list of steps, each a non-blank string, a
    `PlanStepArgs` or a `ToolStepArgs`. Validated with a `Numbering` as context, the numbers
    its steps name and its tool steps are checked too (`Numbering.problems`).

    A string holding such an object as JSON is read as the object, which lets a command line
    pass dependencies (`--edit-plan '{"step": "...", "depends_on": [1]}'`).
    """

    steps: list[str | PlanStepArgs | ToolStepArgs] = Field(min_length=1)

    @field_validator("steps", mode="before")
    @classmethod
    def _objects_written_as_json(cls, steps: Any) -> Any:
        if not isinstance(steps, list):
            return steps
        return [_json_object(step) if isinstance(step, str) else step for step in steps]

    @model_validator(mode="after")
    def _valid_steps(self, info: ValidationInfo) -> PlanArgs:
        given = info.context if isinstance(info.context, Numbering) else None
        numbering = given or Numbering(tools=None)  # a first plan, its tool steps unchecked
        if given and given.tools:
            self.steps = [_call_written_as_text(step, given.tools) for step in self.steps]
            nameable = given.nameable(len(self.steps))
            self.steps = [_plain_money(step, given.tools, nameable) for step in self.steps]
        problems = numbering.problems(self.items())
        if given and not given.tools and any(item.tool for item in self.items()):
            problems.insert(0, "tool steps are not offered in this run: write every step as text")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def items(self) -> list[Item]:
        """The steps as `Item`s: text, numbers named, and a tool step's tool and args."""
        return [
            Item(step.strip())
            if isinstance(step, str)
            else Item.tool_step(step.tool, step.args, step.depends_on)
            if isinstance(step, ToolStepArgs)
            else Item(step.step.strip(), step.depends_on)
            for step in self.steps
        ]


def _call_written_as_text(
    step: str | PlanStepArgs | ToolStepArgs, tools: OwnTools
) -> str | PlanStepArgs | ToolStepArgs:
    """A text step that spells a call of one of the run's tools (`temperature(Lisbon)`), as the
    tool step it means (waiting, as any tool step, only for the steps it names); any other
    step as it is."""
    text = step if isinstance(step, str) else step.step if isinstance(step, PlanStepArgs) else None
    call = tools.call_in_text(text) if text is not None else None
    if call is None:
        return step
    depends_on = step.depends_on if isinstance(step, PlanStepArgs) else None
    return ToolStepArgs(tool=call[0], args=call[1], depends_on=depends_on)


def _plain_money(
    step: str | PlanStepArgs | ToolStepArgs, tools: OwnTools, nameable: set[int]
) -> str | PlanStepArgs | ToolStepArgs:
    """A computing tool step with each `$N` that names no step written as the number N."""
    if not isinstance(step, ToolStepArgs) or step.tool not in tools.computing:
        return step
    return step.model_copy(update={"args": money_as_numbers(step.args, nameable)})


def _json_object(text: str) -> Any:
    """`text` parsed when it is a JSON object with a `step` or a `tool`; else `text` itself."""
    if not text.lstrip().startswith("{"):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) and ("step" in value or "tool" in value) else text


def accept_plan(args: PlanArgs, numbering: Numbering | None = None) -> list[PlannedStep]:
    """The stored plan `args` describe, numbered as `numbering` says (default: a first plan in
    a new thread); ValueError when the numbers it names do not fit."""
    numbering = numbering or Numbering.first_plan()
    items = args.items()
    if problems := numbering.problems(items):
        raise ValueError("; ".join(problems))
    return numbering.plan(items)


class RespondArgs(BaseModel):
    """Arguments of the `respond` decision: the final answer."""

    response: str = Field(min_length=1)


TEXT_STEP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "step": {"type": "string"},
        "depends_on": {"type": "array", "items": {"type": "integer"}},
    },
    "required": ["step"],
}
"""A text step in the lean `plan` schema of a run with tool steps."""


def text_plan_schema() -> dict[str, Any]:
    """The `plan` arguments' schema without tool steps: strings and `PlanStepArgs` objects."""
    items = {"anyOf": [{"type": "string"}, PlanStepArgs.model_json_schema()]}
    steps = {"items": items, "minItems": 1, "title": "Steps", "type": "array"}
    return {"properties": {"steps": steps}, "required": ["steps"], "type": "object"}


def tool_plan_schema(tools: OwnTools) -> dict[str, Any]:
    """The `plan` arguments' schema of a run with tool steps: strings, text steps, and one
    object per tool (`OwnTools.item_schemas`); nothing else, to keep every request lean."""
    items = {"anyOf": [{"type": "string"}, TEXT_STEP_SCHEMA, *tools.item_schemas]}
    steps = {"type": "array", "minItems": 1, "items": items}
    return {"type": "object", "properties": {"steps": steps}, "required": ["steps"]}


def plan_tool(prompts: Prompts, tools: OwnTools = NO_TOOLS) -> DecisionTool:
    """The `plan` tool: `steps`, each a string, a step with its dependencies or, when `tools`
    has any, a tool step calling one of them."""
    if tools:
        steps, schema = prompts.plan_steps_tools, tool_plan_schema(tools)
    else:
        steps, schema = prompts.plan_steps, text_plan_schema()
    return DecisionTool("plan", prompts.plan_tool, PlanArgs, {"steps": steps}, schema=schema)


def with_max_steps(schema: Mapping[str, Any], most: int) -> dict[str, Any]:
    """A `plan` arguments' `schema` whose `steps` list holds at most `most` items."""
    steps = {**schema["properties"]["steps"], "maxItems": most}
    return {**schema, "properties": {**schema["properties"], "steps": steps}}


def adds_call(numbering: Numbering, args: BaseModel) -> bool:
    """Whether a plan sent beside a response is taken over it: when it holds a tool step not
    done yet, whose result the response cannot have seen. Small models add a guessed answer
    to the calls still needed (so the plan goes on), and re-list done steps or restate the
    work in text steps beside a right answer (so the answer stands)."""
    return isinstance(args, PlanArgs) and numbering.adds_call(args.items())


def respond_tool(prompts: Prompts, answer: AnswerMode = "decision") -> DecisionTool:
    """The `respond` tool: `response`, the final answer (with `answer="plain"`, a short note
    that the objective is met: the answer is written next)."""
    described = prompts.respond_response if answer == "decision" else prompts.respond_note
    return DecisionTool("respond", prompts.respond_tool, RespondArgs, {"response": described})


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


def last_wave(state: PlanExecuteState) -> list[ExecutedStep]:
    """The steps of the last wave: the executed steps still in `plan`."""
    planned = {step["id"] for step in state.get("plan", [])}
    return [done for done in state.get("executed_steps", []) if done.get("id") in planned]


def wave_fell_short(state: PlanExecuteState) -> bool:
    """Whether a step of the last wave came back unfinished or failed."""
    return any(done.get("status", "done") != "done" for done in last_wave(state))


def tool_wave(state: PlanExecuteState) -> bool:
    """Whether the last wave held only tool steps (no model call, no judgement to revisit)."""
    wave = last_wave(state)
    return bool(wave) and all("tool" in done for done in wave)
